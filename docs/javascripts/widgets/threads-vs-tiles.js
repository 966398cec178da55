/* Triton in Tiles widget: threads vs tiles (docs/widgets/threads-vs-tiles.html). Shared helpers: core.js. */
(function (T) {
  "use strict";
  var cdiv = T.cdiv, h = T.h, s = T.s, clear = T.clear, slider = T.slider, select = T.select, frame = T.frame, svgRoot = T.svgRoot;

  function threadsVsTiles(root) {
    var st = { n: 20, block: 8 };
    var p = frame(root, "One thread per element (CUDA) against one program per tile (Triton)");
    slider(p.controls, { name: "n", label: "N (vector length)", min: 1, max: 64, value: st.n,
      onInput: function (v) { st.n = v; draw(); } });
    select(p.controls, { name: "block", label: "block size", value: st.block,
      options: [[4, "4"], [8, "8"], [16, "16"]], onChange: function (v) { st.block = Number(v); draw(); } });
    var panels = h("div", { class: "tit-panels" });
    p.figure.appendChild(panels);

    function draw() {
      clear(panels);
      var n = st.n, B = st.block, blocks = cdiv(n, B), cell = 32, W = Math.min(B, 16) * cell + 70;
      // CUDA view: one cell per thread, each with its own index arithmetic.
      var cols = Math.min(B, 16), rowsPerBlock = Math.ceil(B / cols);
      var hC = blocks * rowsPerBlock * (cell + 2) + blocks * 4 + 8;
      var cuda = svgRoot(W, hC, "CUDA view: " + blocks * B + " threads, one per element");
      var y = 4;
      for (var b = 0; b < blocks; b++) {
        cuda.appendChild(s("text", { x: 0, y: y + 20, class: "tit-label", text: "block " + b }));
        for (var t = 0; t < B; t++) {
          var i = b * B + t, masked = i >= n;
          var cx = 64 + (t % cols) * cell, cy = y + Math.floor(t / cols) * (cell + 2);
          var g = s("g", { "data-role": "thread", "data-index": i, "data-masked": masked ? "true" : "false",
            class: masked ? "tit-cell tit-masked" : "tit-cell tit-thread" });
          g.appendChild(s("rect", { x: cx, y: cy, width: cell - 2, height: cell - 2, rx: 3 }));
          g.appendChild(s("text", { x: cx + (cell - 2) / 2, y: cy + 19, class: "tit-cell-text", text: i }));
          g.appendChild(s("title", { text: "thread " + t + " of block " + b + ": i = " + b + "*" + B + "+" + t +
            " = " + i + (masked ? " (i >= N: must skip)" : "") }));
          cuda.appendChild(g);
        }
        y += rowsPerBlock * (cell + 2) + 4;
      }
      // Triton view: one program per tile.
      var hT = blocks * (cell + 6) + 8;
      var tri = svgRoot(W, hT, "Triton view: " + blocks + " programs, one per tile");
      for (var pid = 0; pid < blocks; pid++) {
        var live = Math.min(B, n - pid * B), ty = 4 + pid * (cell + 6);
        var tileW = Math.min(B, 16) * cell - 2;
        var g2 = s("g", { "data-role": "program", "data-pid": pid, class: "tit-program" });
        g2.appendChild(s("text", { x: 0, y: ty + 20, class: "tit-label", text: "pid " + pid }));
        g2.appendChild(s("rect", { x: 64, y: ty, width: tileW, height: cell - 2, rx: 4, class: "tit-tile-rect" }));
        if (live < B) {
          var liveW = tileW * live / B;
          g2.appendChild(s("rect", { x: 64 + liveW, y: ty, width: tileW - liveW, height: cell - 2,
            class: "tit-tile-masked" }));
        }
        g2.appendChild(s("text", { x: 72, y: ty + 20, class: "tit-tile-text",
          text: pid * B + " … " + (pid * B + B - 1) + (live < B ? "  (mask keeps " + live + ")" : "") }));
        tri.appendChild(g2);
      }
      panels.appendChild(h("figure", { class: "tit-panel" }, [
        h("figcaption", { text: "CUDA: " + blocks * B + " threads, each computes i = blockIdx.x*blockDim.x + threadIdx.x" }),
        cuda]));
      panels.appendChild(h("figure", { class: "tit-panel" }, [
        h("figcaption", { text: "Triton: " + blocks + " programs, each owns offsets = pid*BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)" }),
        tri]));
      p.status.textContent = "N = " + n + ": CUDA launches " + blocks + " blocks × " + B + " threads = " + blocks * B +
        " index computations (" + (blocks * B - n) + " threads idle past the end); Triton launches grid = cdiv(" + n +
        ", " + B + ") = " + blocks + " programs, each handling a whole tile.";
      root.dataset.n = n; root.dataset.block = B;
    }
    draw();
  }

  T.register("threads-vs-tiles", threadsVsTiles);
})(window.TIT);
