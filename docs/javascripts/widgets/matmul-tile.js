/* Triton in Tiles widget: matmul tile (docs/widgets/matmul-tile.html). Shared helpers: core.js. */
(function (T) {
  "use strict";
  var cdiv = T.cdiv, h = T.h, s = T.s, append = T.append, clear = T.clear, slider = T.slider, select = T.select, frame = T.frame, svgRoot = T.svgRoot;

  function matmulTile(root) {
    var st = { M: 96, N: 128, K: 64, BM: 32, BN: 32, BK: 16, pid: 0, k: 0, order: "row", group: 2, inflight: 4 };
    var p = frame(root, "One program, one tile of C: streaming K-tiles of A and B");
    var pow2 = function (v) { return String(1 << v); };
    var log2 = function (v) { return Math.round(Math.log2(v)); };
    var sizes = h("div", { class: "tit-controls" }), tiles = h("div", { class: "tit-controls" }),
      prog = h("div", { class: "tit-controls" });
    append(p.controls, [sizes, tiles, prog]);
    p.controls.classList.add("tit-controls-stack");
    ["M", "N", "K"].forEach(function (d) {
      slider(sizes, { name: d, label: d, min: 16, max: 256, step: 16, value: st[d],
        onInput: function (v) { st[d] = v; clamp(); draw(); } });
    });
    ["BM", "BN", "BK"].forEach(function (d) {
      slider(tiles, { name: d, label: d, min: 4, max: 6, value: log2(st[d]), fmt: pow2,
        onInput: function (v) { st[d] = 1 << v; clamp(); draw(); } });
    });
    var pidIn = slider(prog, { name: "pid", label: "program (pid)", min: 0, max: 1, value: 0,
      onInput: function (v) { st.pid = v; st.k = 0; kIn.value = 0; kIn.refresh(); draw(); } });
    var kIn = slider(prog, { name: "k", label: "K step", min: 0, max: 1, value: 0,
      fmt: function (v) { return String(v + 1); }, onInput: function (v) { st.k = v; draw(); } });
    select(prog, { name: "order", label: "program order", value: st.order,
      options: [["row", "row-major"], ["grouped", "grouped (GROUP_SIZE_M = 2)"]],
      onChange: function (v) { st.order = v; draw(); } });
    slider(prog, { name: "inflight", label: "programs in flight", min: 1, max: 8, value: st.inflight,
      onInput: function (v) { st.inflight = v; draw(); } });

    function grid() { return { gm: cdiv(st.M, st.BM), gn: cdiv(st.N, st.BN), kt: cdiv(st.K, st.BK) }; }

    function coords(pid, g) { // pid -> (pid_m, pid_n), as the kernel computes it
      if (st.order === "row") return [Math.floor(pid / g.gn), pid % g.gn];
      var inGroup = st.group * g.gn, groupId = Math.floor(pid / inGroup), first = groupId * st.group;
      var size = Math.min(g.gm - first, st.group);
      return [first + ((pid % inGroup) % size), Math.floor((pid % inGroup) / size)];
    }

    function clamp() {
      var g = grid();
      pidIn.max = g.gm * g.gn - 1;
      if (st.pid > g.gm * g.gn - 1) st.pid = g.gm * g.gn - 1;
      pidIn.value = st.pid; pidIn.refresh();
      kIn.max = g.kt - 1;
      if (st.k > g.kt - 1) st.k = g.kt - 1;
      kIn.value = st.k; kIn.refresh();
    }

    function draw() {
      clear(p.figure);
      var g = grid(), c = coords(st.pid, g), pm = c[0], pn = c[1];
      var unit = Math.min(2.6, 420 / Math.max(st.M + st.K, st.N + st.K));
      var ax = 4, by = 4, kx = st.K * unit, ky = st.K * unit, gap = 10;
      var cx = ax + kx + gap, cy = by + ky + gap;
      var W = cx + st.N * unit + 4, H = cy + st.M * unit + 4;
      var svg = svgRoot(W, H, "A (M×K), B (K×N) and C (M×N) tiled");
      var windowStart = Math.floor(st.pid / st.inflight) * st.inflight;
      var flight = [];
      for (var q = windowStart; q < Math.min(windowStart + st.inflight, g.gm * g.gn); q++) flight.push(coords(q, g));
      var aPanels = new Set(flight.map(function (x) { return x[0]; })), bPanels = new Set(flight.map(function (x) { return x[1]; }));
      // A: rows of tiles (pid_m) × K-tiles.
      for (var i = 0; i < g.gm; i++) for (var kk = 0; kk < g.kt; kk++) {
        var act = i === pm && kk === st.k, used = i === pm && kk < st.k;
        svg.appendChild(s("rect", { x: ax + kk * st.BK * unit, y: cy + i * st.BM * unit,
          width: Math.min(st.BK, st.K - kk * st.BK) * unit - 1, height: Math.min(st.BM, st.M - i * st.BM) * unit - 1,
          "data-role": "a-tile", "data-m": i, "data-k": kk, "data-active": act ? "true" : "false",
          "data-shared": aPanels.has(i) ? "true" : "false",
          class: "tit-mm" + (act ? " tit-active-a" : used ? " tit-used" : "") + (aPanels.has(i) ? " tit-panel-a" : "") }));
      }
      for (var kk2 = 0; kk2 < g.kt; kk2++) for (var j = 0; j < g.gn; j++) {
        var act2 = j === pn && kk2 === st.k, used2 = j === pn && kk2 < st.k;
        svg.appendChild(s("rect", { x: cx + j * st.BN * unit, y: by + kk2 * st.BK * unit,
          width: Math.min(st.BN, st.N - j * st.BN) * unit - 1, height: Math.min(st.BK, st.K - kk2 * st.BK) * unit - 1,
          "data-role": "b-tile", "data-n": j, "data-k": kk2, "data-active": act2 ? "true" : "false",
          "data-shared": bPanels.has(j) ? "true" : "false",
          class: "tit-mm" + (act2 ? " tit-active-b" : used2 ? " tit-used" : "") + (bPanels.has(j) ? " tit-panel-b" : "") }));
      }
      var pidOf = {};
      for (var q2 = 0; q2 < g.gm * g.gn; q2++) { var cc = coords(q2, g); pidOf[cc[0] + "," + cc[1]] = q2; }
      for (var i2 = 0; i2 < g.gm; i2++) for (var j2 = 0; j2 < g.gn; j2++) {
        var qq = pidOf[i2 + "," + j2], mine = i2 === pm && j2 === pn;
        var inF = qq >= windowStart && qq < windowStart + st.inflight;
        var tw = Math.min(st.BN, st.N - j2 * st.BN) * unit - 1, th = Math.min(st.BM, st.M - i2 * st.BM) * unit - 1;
        var cg = s("g", { "data-role": "c-tile", "data-pid": qq, "data-pid-m": i2, "data-pid-n": j2,
          "data-active": mine ? "true" : "false", "data-inflight": inF ? "true" : "false",
          class: "tit-mm-c" + (mine ? " tit-active-c" : inF ? " tit-inflight" : "") });
        var rect = s("rect", { x: cx + j2 * st.BN * unit, y: cy + i2 * st.BM * unit, width: tw, height: th });
        cg.appendChild(rect);
        if (tw > 16 && th > 12) cg.appendChild(s("text", { x: cx + j2 * st.BN * unit + tw / 2, y: cy + i2 * st.BM * unit + th / 2 + 4,
          class: "tit-cell-text", text: qq }));
        cg.appendChild(s("title", { text: "C tile (" + i2 + ", " + j2 + "): program " + qq }));
        (function (pidv) { cg.addEventListener("click", function () { st.pid = pidv; st.k = 0; clamp(); draw(); }); })(qq);
        svg.appendChild(cg);
      }
      svg.appendChild(s("text", { x: ax, y: cy - 3, class: "tit-label", text: "A" }));
      svg.appendChild(s("text", { x: cx - 14, y: by + 12, class: "tit-label", text: "B" }));
      p.figure.appendChild(svg);
      var k0 = st.k * st.BK, k1 = Math.min(st.K, k0 + st.BK);
      var m0 = pm * st.BM, n0 = pn * st.BN;
      p.status.textContent = "grid = cdiv(" + st.M + ", " + st.BM + ") × cdiv(" + st.N + ", " + st.BN + ") = " + g.gm + " × " +
        g.gn + " programs. Program " + st.pid + " owns C[" + m0 + ":" + Math.min(st.M, m0 + st.BM) + ", " + n0 + ":" +
        Math.min(st.N, n0 + st.BN) + "] (pid_m = " + pm + ", pid_n = " + pn + "); K step " + (st.k + 1) + " of " + g.kt +
        ": acc += A[" + m0 + ":" + Math.min(st.M, m0 + st.BM) + ", " + k0 + ":" + k1 + "] @ B[" + k0 + ":" + k1 + ", " + n0 +
        ":" + Math.min(st.N, n0 + st.BN) + "]. The " + flight.length + " programs in flight (" + windowStart + "–" +
        (windowStart + flight.length - 1) + ", " + (st.order === "row" ? "row-major" : "grouped") + " order) read " +
        aPanels.size + " A row-panels and " + bPanels.size + " B column-panels: " + (aPanels.size + bPanels.size) + " panels.";
      root.dataset.pidM = pm; root.dataset.pidN = pn;
      root.dataset.aPanels = aPanels.size; root.dataset.bPanels = bPanels.size;
      root.dataset.order = st.order;
    }
    clamp();
    draw();
  }

  T.register("matmul-tile", matmulTile);
})(window.TIT);
