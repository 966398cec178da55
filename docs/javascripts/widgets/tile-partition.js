/* Triton in Tiles widget: tile partition (docs/widgets/tile-partition.html). Shared helpers: core.js. */
(function (T) {
  "use strict";
  var cdiv = T.cdiv, h = T.h, s = T.s, clear = T.clear, slider = T.slider, frame = T.frame, svgRoot = T.svgRoot, loadData = T.loadData;

  function tilePartition(root) {
    var st = { n: 27, logb: 3 };
    var trace = null;
    var p = frame(root, "Tiles over the data: grid = cdiv(N, BLOCK_SIZE)");
    var nIn = slider(p.controls, { name: "n", label: "N", min: 1, max: 32, value: st.n,
      onInput: function (v) { st.n = v; draw(); } });
    slider(p.controls, { name: "block", label: "BLOCK_SIZE", min: 2, max: 5, value: st.logb,
      fmt: function (v) { return String(1 << v); }, onInput: function (v) { st.logb = v; draw(); } });
    var source = h("p", { class: "tit-note", "data-role": "source" });
    p.figure.after(source);

    function programsFor(n, B) {
      var rec = trace && trace.configs && trace.configs[n + "/" + B];
      if (rec) {
        return { recorded: true, programs: rec.programs.map(function (prog) {
          var op = prog.ops[0];
          var offs = op.list || Array.from({ length: op.count }, function (_, k) { return op.start + k; });
          return { pid: prog.pid, offsets: offs, mask: op.mask.split("").map(function (c) { return c === "1"; }) };
        }) };
      }
      var out = [];
      for (var pid = 0; pid < cdiv(n, B); pid++) {
        var offs = [], mask = [];
        for (var k = 0; k < B; k++) { offs.push(pid * B + k); mask.push(pid * B + k < n); }
        out.push({ pid: pid, offsets: offs, mask: mask });
      }
      return { recorded: false, programs: out };
    }

    function draw() {
      var n = st.n, B = 1 << st.logb, res = programsFor(n, B), progs = res.programs;
      clear(p.figure);
      var W = 640, left = 64, cw = (W - left - 4) / B, rh = 34;
      var svg = svgRoot(W, progs.length * rh + 8, "Tile partition of N = " + n + " with BLOCK_SIZE = " + B);
      var masked = 0;
      progs.forEach(function (prog, r) {
        var y = 4 + r * rh;
        var g = s("g", { "data-role": "tile", "data-pid": prog.pid });
        g.appendChild(s("text", { x: 0, y: y + 20, class: "tit-label", text: "pid " + prog.pid }));
        prog.offsets.forEach(function (off, k) {
          var on = prog.mask[k];
          if (!on) masked += 1;
          var lane = s("g", { "data-role": "lane", "data-offset": off, "data-masked": on ? "false" : "true",
            class: on ? "tit-cell tit-live" : "tit-cell tit-masked" });
          lane.appendChild(s("rect", { x: left + k * cw, y: y, width: cw - 2, height: rh - 6, rx: 3 }));
          if (cw >= 16) lane.appendChild(s("text", { x: left + k * cw + (cw - 2) / 2, y: y + 18,
            class: "tit-cell-text", text: off }));
          lane.appendChild(s("title", { text: "offset " + off + (on ? "" : ": masked (offset >= N)") }));
          g.appendChild(lane);
        });
        svg.appendChild(g);
      });
      p.figure.appendChild(svg);
      p.status.textContent = "grid = cdiv(" + n + ", " + B + ") = " + progs.length + " programs; " +
        progs.length * B + " lanes, " + masked + " masked in the last tile (" + progs.length + "×" + B + " − " + n + ").";
      source.textContent = res.recorded
        ? "Offsets and masks recorded from examples/vector_add.py's add_kernel, run under TRITON_INTERPRET=1 at build time."
        : "Offsets and masks computed in the browser (no recorded trace for this configuration).";
      root.dataset.source = res.recorded ? "recorded" : "computed";
      root.dataset.n = n; root.dataset.block = B;
      root.dataset.tiles = progs.length; root.dataset.masked = masked;
    }
    draw();
    return loadData("vector_add_trace.json").then(function (t) {
      trace = t;
      if (t && t.ns) nIn.max = Math.max.apply(null, t.ns);
      draw();
    });
  }

  T.register("tile-partition", tilePartition);
})(window.TIT);
