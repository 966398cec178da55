/* Triton in Tiles widget: strides (docs/widgets/strides.html). Shared helpers: core.js. */
(function (T) {
  "use strict";
  var h = T.h, s = T.s, clear = T.clear, slider = T.slider, select = T.select, frame = T.frame, svgRoot = T.svgRoot;

  var LAYOUTS = {
    contiguous: { label: "contiguous x (4×6)", sm: 6, sn: 1, note: "x = torch.empty(4, 6): rows back to back" },
    transposed: { label: "transposed: y.t() of a 6×4 y", sm: 1, sn: 4, note: "x = y.t() with y = torch.empty(6, 4): a view, no copy" },
    sliced: { label: "sliced: y[:, ::2] of a 4×12 y", sm: 12, sn: 2, note: "x = y[:, ::2] with y = torch.empty(4, 12): every other column" },
  };

  function strides(root) {
    var st = { layout: "contiguous", sm: 6, sn: 1, bm: 4, bn: 6, rows: 4, cols: 6 };
    var p = frame(root, "Strides: where a 2-D pointer tile lands in flat memory");
    var lay = select(p.controls, { name: "layout", label: "layout", value: st.layout,
      options: Object.keys(LAYOUTS).map(function (k) { return [k, LAYOUTS[k].label]; }).concat([["custom", "custom strides"]]),
      onChange: function (v) {
        st.layout = v;
        if (LAYOUTS[v]) { st.sm = LAYOUTS[v].sm; st.sn = LAYOUTS[v].sn; smIn.value = st.sm; snIn.value = st.sn; smIn.refresh(); snIn.refresh(); }
        draw();
      } });
    var smIn = slider(p.controls, { name: "stride_m", label: "stride_m", min: 0, max: 12, value: st.sm,
      onInput: function (v) { st.sm = v; custom(); draw(); } });
    var snIn = slider(p.controls, { name: "stride_n", label: "stride_n", min: 0, max: 12, value: st.sn,
      onInput: function (v) { st.sn = v; custom(); draw(); } });
    slider(p.controls, { name: "block_m", label: "BLOCK_M", min: 1, max: 4, value: st.bm,
      onInput: function (v) { st.bm = v; draw(); } });
    slider(p.controls, { name: "block_n", label: "BLOCK_N", min: 1, max: 6, value: st.bn,
      onInput: function (v) { st.bn = v; draw(); } });

    function custom() {
      var match = Object.keys(LAYOUTS).filter(function (k) { return LAYOUTS[k].sm === st.sm && LAYOUTS[k].sn === st.sn; })[0];
      st.layout = match || "custom";
      lay.value = st.layout;
    }

    function draw() {
      clear(p.figure);
      var addrs = [];
      for (var m = 0; m < st.bm; m++) {
        var row = [];
        for (var n = 0; n < st.bn; n++) row.push(m * st.sm + n * st.sn);
        addrs.push(row);
      }
      var flat = [].concat.apply([], addrs);
      var all = [];
      for (var m2 = 0; m2 < st.rows; m2++) for (var n2 = 0; n2 < st.cols; n2++) all.push(m2 * st.sm + n2 * st.sn);
      var storage = Math.max(24, Math.max.apply(null, all) + 1);
      var touched = new Set(flat);
      var cw = 40, W = 640;
      // Logical view.
      var svg = svgRoot(40 + st.cols * cw + 4, st.rows * cw + 30, "Logical 4×6 view with each element's flat address");
      svg.appendChild(s("text", { x: 0, y: 14, class: "tit-label", text: "x[m, n] → address m·" + st.sm + " + n·" + st.sn }));
      for (var i = 0; i < st.rows; i++) for (var j = 0; j < st.cols; j++) {
        var a = i * st.sm + j * st.sn, inTile = i < st.bm && j < st.bn;
        var g = s("g", { "data-role": "element", "data-m": i, "data-n": j, "data-address": a,
          "data-in-tile": inTile ? "true" : "false", class: "tit-cell " + (inTile ? "tit-live" : "tit-idle") });
        g.appendChild(s("rect", { x: 40 + j * cw, y: 22 + i * cw, width: cw - 3, height: cw - 3, rx: 3 }));
        g.appendChild(s("text", { x: 40 + j * cw + (cw - 3) / 2, y: 22 + i * cw + 24, class: "tit-cell-text", text: a }));
        svg.appendChild(g);
      }
      for (var i2 = 0; i2 < st.rows; i2++) svg.appendChild(s("text", { x: 4, y: 22 + i2 * cw + 24, class: "tit-label", text: "m=" + i2 }));
      // Flat memory.
      // on a phone the strip is drawn at the width it is shown at, 8 cells a row, so that its
      // numbers are not scaled down to a few pixels
      var MW = Math.min(W, Math.max(280, p.figure.clientWidth || W));
      var perRow = MW < 480 ? 8 : 16, mw = (MW - 40) / perRow, mrows = Math.ceil(storage / perRow);
      var mem = svgRoot(MW, mrows * (mw + 2) + 24, "Flat memory: " + storage + " elements, the tile's addresses highlighted");
      mem.appendChild(s("text", { x: 0, y: 14, class: "tit-label", text: "flat memory (elements)" }));
      for (var addr = 0; addr < storage; addr++) {
        var hit = touched.has(addr);
        var g2 = s("g", { "data-role": "addr", "data-address": addr, "data-touched": hit ? "true" : "false",
          class: "tit-cell " + (hit ? "tit-touched" : "tit-idle") });
        var x = 40 + (addr % perRow) * mw, y = 22 + Math.floor(addr / perRow) * (mw + 2);
        g2.appendChild(s("rect", { x: x, y: y, width: mw - 2, height: mw - 2, rx: 3 }));
        g2.appendChild(s("text", { x: x + (mw - 2) / 2, y: y + mw / 2 + 3, class: "tit-cell-text", text: addr }));
        mem.appendChild(g2);
      }
      p.figure.appendChild(svg);
      p.figure.appendChild(mem);
      var list = h("pre", { class: "tit-addresses", "data-role": "address-list", tabindex: "0",
        "aria-label": "addresses of the pointer tile" });
      list.textContent = "offs_m[:, None] * " + st.sm + " + offs_n[None, :] * " + st.sn + " =\n" +
        addrs.map(function (r) { return "  [" + r.join(", ") + "]"; }).join("\n");
      list.setAttribute("data-addresses", JSON.stringify(addrs));
      p.figure.appendChild(list);
      var dup = flat.length - touched.size;
      p.status.textContent = (LAYOUTS[st.layout] ? LAYOUTS[st.layout].note + ". " : "Custom strides. ") +
        "The " + st.bm + "×" + st.bn + " tile touches " + touched.size + " distinct addresses" +
        (dup ? " (" + dup + " lanes alias another lane)" : "") + "; neighbouring lanes along n are " + st.sn +
        " element" + (st.sn === 1 ? "" : "s") + " apart" + (st.sn === 1 ? " (contiguous: loads coalesce)." : " (strided: loads do not coalesce).");
      root.dataset.layout = st.layout; root.dataset.strideM = st.sm; root.dataset.strideN = st.sn;
    }
    draw();
  }

  T.register("strides", strides);
})(window.TIT);
