/* Triton in Tiles widget: kernel stepper (docs/widgets/kernel-stepper.html). Shared helpers: core.js. */
(function (T) {
  "use strict";
  var cdiv = T.cdiv, h = T.h, s = T.s, clear = T.clear, slider = T.slider, button = T.button, frame = T.frame, svgRoot = T.svgRoot, loadData = T.loadData;

  var STEPS = [
    ["pid", "tl.program_id(0): this program's index in the grid."],
    ["offsets", "offsets: the BLOCK_SIZE indices this program owns."],
    ["mask", "mask: True for lanes inside the vector, False past its end."],
    ["load_x", "load x at x_ptr + offsets; masked lanes are not read; with no other= their value is undefined, shown here as ? (the interpreter trace shows 0)."],
    ["load_y", "load y at y_ptr + offsets; masked lanes are not read and hold undefined values, as for x."],
    ["store", "store x + y at z_ptr + offsets; masked lanes are not written."],
  ];

  function kernelStepper(root) {
    var p = frame(root, "Step through add_kernel, one line at a time");
    p.status.textContent = "Loading the kernel trace…";
    return loadData("vector_add_trace.json").then(function (trace) {
      if (!trace || !trace.stepper) {
        p.status.textContent = "The recorded kernel trace (assets/data/vector_add_trace.json) is missing: rebuild the site.";
        root.dataset.source = "missing";
        return;
      }
      var T = trace.stepper, B = T.block, n = T.n, P = cdiv(n, B);
      var st = { pid: 0, step: -1 };
      var pidIn = slider(p.controls, { name: "pid", label: "program (pid)", min: 0, max: P - 1, value: 0,
        onInput: function (v) { st.pid = v; draw(); } });
      var prev = button(p.controls, "◀ Previous line", "prev", function () { if (st.step > -1) { st.step -= 1; draw(); } });
      var next = button(p.controls, "Next line ▶", "next", function () {
        if (st.step < STEPS.length - 1) st.step += 1;
        else if (st.pid < P - 1) { st.pid += 1; st.step = 0; pidIn.value = st.pid; pidIn.refresh(); }
        draw();
      });
      button(p.controls, "Reset", "reset", function () { st.step = -1; st.pid = 0; pidIn.value = 0; pidIn.refresh(); draw(); });
      var layout = h("div", { class: "tit-stepper" });
      var code = h("pre", { class: "tit-code", "data-role": "source", tabindex: "0", "aria-label": "add_kernel source" });
      var lines = T.source.map(function (text, i) {
        var ln = h("span", { class: "tit-line", "data-line": i, text: text || " " });
        code.appendChild(ln);
        return ln;
      });
      var mem = h("div", { class: "tit-mem" });
      layout.appendChild(code); layout.appendChild(mem);
      p.figure.appendChild(layout);
      var note = h("p", { class: "tit-note", text: "Values recorded from " + trace.meta.kernel + " under " +
        trace.meta.recorded_with + " with N = " + n + ", BLOCK_SIZE = " + B + " (" + trace.meta.x + ")." });
      p.figure.after(note);

      function ev(pid, op, tensor) {
        return T.events.filter(function (e) { return e.pid === pid && e.op === op && e.tensor === tensor; })[0];
      }

      function draw() {
        var step = st.step, stepName = step >= 0 ? STEPS[step][0] : null, pid = st.pid;
        var active = stepName ? T.lines[stepName] : -1;
        lines.forEach(function (ln, i) {
          ln.classList.toggle("tit-active", i === active);
          ln.setAttribute("data-active", i === active ? "true" : "false");
        });
        var lx = ev(pid, "load", "x"), ly = ev(pid, "load", "y"), sz = ev(pid, "store", "z");
        var offsets = lx.offsets, mask = lx.mask.split("").map(function (c) { return c === "1"; });
        var reached = function (name) { return step >= STEPS.map(function (x) { return x[0]; }).indexOf(name); };
        clear(mem);
        var cols = P * B, cw = Math.min(44, 600 / cols), W = cols * cw + 70;
        var svg = svgRoot(W, 4 * 40 + 90, "Memory touched by program " + pid);
        var rowsDef = [["x", T.x, "load_x", lx], ["y", T.y, "load_y", ly], ["z", null, "store", sz]];
        rowsDef.forEach(function (row, r) {
          var y = 6 + r * 40;
          svg.appendChild(s("text", { x: 0, y: y + 20, class: "tit-label", text: row[0] + " (HBM)" }));
          for (var i = 0; i < cols; i++) {
            var inside = i < n, lane = offsets.indexOf(i);
            var touched = stepName === row[2] && lane >= 0 && mask[lane];
            var val = "";
            if (inside && row[1]) val = row[1][i];
            if (row[0] === "z") { // stores of earlier programs, and this one once it has stored
              T.events.forEach(function (e) {
                if (e.op !== "store" || (e.pid > pid) || (e.pid === pid && !reached("store"))) return;
                var k = e.offsets.indexOf(i);
                if (k >= 0 && e.mask[k] === "1") val = e.values[k];
              });
            }
            var filled = inside && val !== "";
            var g = s("g", { "data-role": "mem", "data-tensor": row[0], "data-index": i,
              "data-touched": touched ? "true" : "false", "data-inside": inside ? "true" : "false",
              class: "tit-cell " + (filled ? "tit-live" : inside ? "tit-idle" : "tit-outside") + (touched ? " tit-touched" : "") });
            g.appendChild(s("rect", { x: 70 + i * cw, y: y, width: cw - 2, height: 30, rx: 3 }));
            g.appendChild(s("text", { x: 70 + i * cw + (cw - 2) / 2, y: y + 19, class: "tit-cell-text",
              text: val === "" ? (inside ? "" : "·") : val }));
            svg.appendChild(g);
          }
        });
        // This program's tile (registers): offsets, mask, values.
        var y0 = 6 + 3 * 40 + 8;
        var regs = [];
        if (reached("offsets")) regs.push(["offsets", offsets.map(String)]);
        if (reached("mask")) regs.push(["mask", mask.map(function (m) { return m ? "T" : "F"; })]);
        if (reached("store")) regs.push(["x + y", sz.values.map(function (v, k) { return mask[k] ? String(v) : "–"; })]);
        else if (reached("load_y")) regs.push(["y", ly.values.map(function (v, k) { return mask[k] ? String(v) : "?"; })]);
        else if (reached("load_x")) regs.push(["x", lx.values.map(function (v, k) { return mask[k] ? String(v) : "?"; })]);
        if (!regs.length) svg.appendChild(s("text", { x: 0, y: y0 + 14, class: "tit-label", text: "pid = " + (step >= 0 ? pid : "?") }));
        regs.forEach(function (reg, r) {
          var y = y0 + r * 24;
          svg.appendChild(s("text", { x: 0, y: y + 14, class: "tit-label", text: reg[0] }));
          reg[1].forEach(function (v, k) {
            var x = 70 + offsets[k] * cw;
            var g = s("g", { "data-role": "reg", "data-reg": reg[0], "data-lane": k,
              class: "tit-reg" + (mask[k] ? "" : " tit-masked") });
            g.appendChild(s("rect", { x: x, y: y, width: cw - 2, height: 20, rx: 2 }));
            g.appendChild(s("text", { x: x + (cw - 2) / 2, y: y + 14, class: "tit-reg-text", text: v }));
            svg.appendChild(g);
          });
        });
        svg.setAttribute("viewBox", "0 0 " + W + " " + (y0 + 24 * 3 + 4));
        svg.setAttribute("height", y0 + 24 * 3 + 4);
        mem.appendChild(svg);
        var touchedN = svg.querySelectorAll('[data-touched="true"]').length;
        root.dataset.step = stepName || "none";
        root.dataset.pid = pid;
        root.dataset.activeLine = active;
        p.status.textContent = step < 0
          ? "Program " + pid + " of " + P + " (grid = cdiv(" + n + ", " + B + ")). Press “Next line”."
          : "Program " + pid + ", line " + (active + 1) + ": " + STEPS[step][1] +
            (touchedN ? " Touches " + touchedN + " element" + (touchedN > 1 ? "s" : "") + " of " + rowsDef[
              ["load_x", "load_y", "store"].indexOf(stepName)][0] + "." : "") +
            (regs.length ? " Tile lanes: " + regs[regs.length - 1][0] + " = [" + regs[regs.length - 1][1].join(", ") + "]." : "");
        prev.disabled = step < 0;
        next.disabled = step === STEPS.length - 1 && pid === P - 1;
      }
      root.dataset.source = "recorded";
      draw();
    });
  }

  T.register("kernel-stepper", kernelStepper);
})(window.TIT);
