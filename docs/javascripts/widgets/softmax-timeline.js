/* Triton in Tiles widget: softmax timeline (docs/widgets/softmax-timeline.html). Shared helpers: core.js. */
(function (T) {
  "use strict";
  var s = T.s, clear = T.clear, fmtInt = T.fmtInt, fmtBytes = T.fmtBytes, select = T.select, frame = T.frame, svgRoot = T.svgRoot, loadData = T.loadData;

  var SOFTMAX_BENCH = "softmax_fp32";
  var SOFTMAX_ELEMS = Math.pow(2, 26);

  function softmaxTimeline(root) {
    var p = frame(root, "Softmax: five round trips through HBM, or one");
    p.status.textContent = "Loading benchmark results…";
    return loadData("results.json").then(function (results) {
      var rows = ((results && results.rows) || []).filter(function (r) {
        return r.bench === SOFTMAX_BENCH && (r.timing || "do_bench") === "do_bench";
      });
      var xs = Array.from(new Set(rows.map(function (r) { return Number(r.x); }))).sort(function (a, b) { return a - b; });
      var measured = xs.length > 0;
      if (!measured) xs = [512, 1024, 2048, 4096, 8192, 16384, 32768];
      var st = { n: xs.indexOf(4096) >= 0 ? 4096 : xs[Math.floor(xs.length / 2)] };
      select(p.controls, { name: "n", label: "row length N (M = 2^26 / N rows, fp32)", value: st.n,
        options: xs.map(function (x) { return [x, x + " (M = " + fmtInt(Math.max(1, Math.floor(SOFTMAX_ELEMS / x))) + ")"]; }),
        onChange: function (v) { st.n = Number(v); draw(); } });
      root.dataset.measured = measured ? "true" : "false";

      function kernels(n) {
        var m = Math.max(1, Math.floor(SOFTMAX_ELEMS / n)), mn = m * n, f = 4;
        return {
          m: m,
          unfused: [
            { name: "max", read: mn * f, write: m * f },
            { name: "x − max", read: (mn + m) * f, write: mn * f },
            { name: "exp", read: mn * f, write: mn * f },
            { name: "sum", read: mn * f, write: m * f },
            { name: "÷ sum", read: (mn + m) * f, write: mn * f },
          ],
          fused: [{ name: "softmax", read: mn * f, write: mn * f }],
        };
      }

      function draw() {
        clear(p.figure);
        var n = st.n, k = kernels(n);
        var total = function (ks) { return ks.reduce(function (a, x) { return a + x.read + x.write; }, 0); };
        var tu = total(k.unfused), tf = total(k.fused);
        var W = 640, left = 150, scale = (W - left - 8) / tu, y = 8;
        var here = rows.filter(function (r) { return Number(r.x) === n; });
        var H = 2 * 44 + 30 + (here.length ? 24 + here.length * 30 : 0);
        var svg = svgRoot(W, H, "Bytes moved by unfused and fused softmax");
        [["unfused", k.unfused], ["fused", k.fused]].forEach(function (row) {
          svg.appendChild(s("text", { x: 0, y: y + 22, class: "tit-label",
            text: row[0] + ": " + row[1].length + (row[1].length > 1 ? " kernels" : " kernel") }));
          var x = left;
          row[1].forEach(function (kern, i) {
            var g = s("g", { "data-role": "kernel", "data-variant": row[0], "data-bytes": kern.read + kern.write,
              class: "tit-kernel tit-hue-" + (i % 6) });
            var rw = kern.read * scale, ww = kern.write * scale;
            g.appendChild(s("rect", { x: x, y: y, width: Math.max(1, rw - 1), height: 32, class: "tit-read" }));
            g.appendChild(s("rect", { x: x + rw, y: y, width: Math.max(1, ww - 1), height: 32, class: "tit-write" }));
            if (rw + ww > 46) g.appendChild(s("text", { x: x + 4, y: y + 20, class: "tit-run-text", text: kern.name }));
            g.appendChild(s("title", { text: kern.name + ": reads " + fmtBytes(kern.read) + ", writes " + fmtBytes(kern.write) }));
            svg.appendChild(g);
            x += rw + ww;
          });
          y += 44;
        });
        svg.appendChild(s("text", { x: left, y: y + 12, class: "tit-note-svg",
          text: "bar length = bytes through HBM (dark: read, light: written)" }));
        y += 24;
        var msg = "N = " + n + ", M = " + fmtInt(k.m) + " rows: unfused moves " + fmtBytes(tu) + " through HBM, fused moves " +
          fmtBytes(tf) + " (" + (tu / tf).toFixed(1) + "× less). ";
        if (here.length) {
          var maxMs = Math.max.apply(null, here.map(function (r) { return r.ms_p50; }));
          svg.appendChild(s("text", { x: 0, y: y + 14, class: "tit-label", text: "measured time (median)" }));
          y += 24;
          here.sort(function (a, b) { return a.ms_p50 - b.ms_p50; }).forEach(function (r) {
            var g = s("g", { "data-role": "measured", "data-provider": r.provider, "data-ms": r.ms_p50,
              class: "tit-kernel tit-measured" });
            g.appendChild(s("text", { x: 0, y: y + 17, class: "tit-label", text: r.provider }));
            g.appendChild(s("rect", { x: left, y: y, width: Math.max(2, (W - left - 150) * r.ms_p50 / maxMs), height: 22 }));
            g.appendChild(s("text", { x: left + 6 + (W - left - 150) * r.ms_p50 / maxMs, y: y + 16, class: "tit-label",
              text: r.ms_p50.toPrecision(3) + " ms, " + fmtInt(r.value) + " " + r.metric }));
            svg.appendChild(g);
            y += 30;
          });
          var meta = results.meta && results.meta[here[0].example];
          msg += "Measured " + (meta && meta.gpu ? "on " + meta.gpu + " " : "") + "(do_bench median): " +
            here.map(function (r) { return r.provider + " " + r.ms_p50.toPrecision(3) + " ms"; }).join(", ") + ".";
          var ceil = meta && meta.ceilings && meta.ceilings.copy_gbps;
          if (ceil) msg += " At the measured copy ceiling (" + fmtInt(ceil) + " GB/s) the unfused bytes alone would take at least " +
            (tu / ceil / 1e6).toPrecision(3) + " ms.";
        } else if (measured) {
          msg += "No measured times for N = " + n + ".";
        } else {
          msg += "No measured times are available yet (no " + SOFTMAX_BENCH + " results in this build): the bars show bytes computed from the shape only.";
        }
        p.figure.appendChild(svg);
        svg.setAttribute("viewBox", "0 0 " + W + " " + y);
        svg.setAttribute("height", y);
        p.status.textContent = msg;
        root.dataset.n = n;
        root.dataset.unfusedBytes = tu;
        root.dataset.fusedBytes = tf;
      }
      draw();
    });
  }

  T.register("softmax-timeline", softmaxTimeline);
})(window.TIT);
