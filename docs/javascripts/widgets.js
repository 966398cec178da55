/* Triton in Tiles: the interactive widgets.
 *
 * Every widget is a `<div class="tit-widget" data-widget="NAME">` included from
 * docs/widgets/NAME.html. Initialisation runs from Material's `document$` (so it
 * works after instant navigation) or, where Material is absent, on
 * DOMContentLoaded; it is idempotent per element (data-ready="true").
 *
 * No external requests: data comes from the site's own assets/data/*.json
 * (results.json from the benchmark results, vector_add_trace.json recorded by
 * scripts/widget_data.py from the real kernel under TRITON_INTERPRET=1).
 *
 * Drawn parts carry data attributes (data-role, data-masked, ...) so the browser
 * tests in tests/browser/ can count them.
 */
(function () {
  "use strict";

  var SVG_NS = "http://www.w3.org/2000/svg";
  // The site root, from this script's own URL (javascripts/widgets.js): works under a sub-path.
  var SCRIPT_SRC = (document.currentScript && document.currentScript.src) || "";
  var SITE_ROOT = SCRIPT_SRC ? new URL("../", SCRIPT_SRC) : new URL("./", document.baseURI);
  var uid = 0;
  var dataCache = {};

  /* ---------- small helpers ---------- */

  function cdiv(a, b) { return Math.floor((a + b - 1) / b); }

  function h(tag, attrs, children) {
    var node = document.createElement(tag);
    setAttrs(node, attrs);
    append(node, children);
    return node;
  }

  function s(tag, attrs, children) {
    var node = document.createElementNS(SVG_NS, tag);
    setAttrs(node, attrs);
    append(node, children);
    return node;
  }

  function setAttrs(node, attrs) {
    if (!attrs) return;
    Object.keys(attrs).forEach(function (k) {
      var v = attrs[k];
      if (v === null || v === undefined || v === false) return;
      if (k === "text") node.textContent = String(v);
      else if (k.slice(0, 2) === "on" && typeof v === "function") node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "true" : String(v));
    });
  }

  function append(node, children) {
    if (children === undefined || children === null) return;
    if (!Array.isArray(children)) children = [children];
    children.forEach(function (c) {
      if (c === null || c === undefined || c === false) return;
      node.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
    });
  }

  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }

  function fmtInt(n) { return Math.round(n).toLocaleString("en-US"); }

  function fmtBytes(b) {
    if (b >= 1e9) return (b / 1e9).toFixed(2) + " GB";
    if (b >= 1e6) return (b / 1e6).toFixed(1) + " MB";
    if (b >= 1e3) return (b / 1e3).toFixed(1) + " kB";
    return b + " B";
  }

  function nextId(name) { uid += 1; return "tit-" + name + "-" + uid; }

  // A labelled <input type=range> with a live <output>.
  function slider(parent, o) {
    var id = nextId("in");
    var input = h("input", { type: "range", id: id, min: o.min, max: o.max, step: o.step || 1, value: o.value,
      "data-control": o.name });
    var out = h("output", { for: id, "data-output": o.name });
    var show = function () { out.textContent = o.fmt ? o.fmt(Number(input.value)) : input.value; };
    show();
    input.addEventListener("input", function () { show(); o.onInput(Number(input.value)); });
    parent.appendChild(h("div", { class: "tit-control" }, [h("label", { for: id, text: o.label }), input, out]));
    input.refresh = show;
    return input;
  }

  function select(parent, o) {
    var id = nextId("sel");
    var sel = h("select", { id: id, "data-control": o.name });
    o.options.forEach(function (opt) {
      sel.appendChild(h("option", { value: opt[0], text: opt[1], selected: String(opt[0]) === String(o.value) }));
    });
    sel.addEventListener("change", function () { o.onChange(sel.value); });
    parent.appendChild(h("div", { class: "tit-control" }, [h("label", { for: id, text: o.label }), sel]));
    return sel;
  }

  function button(parent, label, name, onClick) {
    var b = h("button", { type: "button", class: "tit-button", "data-control": name, text: label });
    b.addEventListener("click", onClick);
    parent.appendChild(b);
    return b;
  }

  function frame(root, title) {
    clear(root);
    var parts = {
      title: h("p", { class: "tit-title", text: title }),
      controls: h("div", { class: "tit-controls" }),
      figure: h("div", { class: "tit-figure" }),
      status: h("p", { class: "tit-status", "aria-live": "polite", "data-role": "status" }),
    };
    append(root, [parts.title, parts.controls, parts.figure, parts.status]);
    return parts;
  }

  function svgRoot(width, height, label) {
    return s("svg", { viewBox: "0 0 " + width + " " + height, width: width, height: height, role: "img",
      "aria-label": label, class: "tit-svg", preserveAspectRatio: "xMinYMin meet", style: "max-width:" + width + "px" });
  }

  function loadData(name) {
    if (!dataCache[name]) {
      dataCache[name] = fetch(new URL("assets/data/" + name, SITE_ROOT).href)
        .then(function (r) { return r.ok ? r.json() : null; })
        .catch(function () { return null; });
    }
    return dataCache[name];
  }

  /* ---------- 1. threads vs tiles ---------- */

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

  /* ---------- 2. tile partition ---------- */

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

  /* ---------- 3. programs in flight ---------- */

  function programsInFlight(root) {
    var st = { tiles: 24, sms: 4, mode: "tile", t: 0, playing: false };
    var p = frame(root, "Programs in flight on a fixed number of SMs");
    slider(p.controls, { name: "tiles", label: "tiles", min: 4, max: 48, value: st.tiles,
      onInput: function (v) { st.tiles = v; rebuild(); } });
    slider(p.controls, { name: "sms", label: "SMs", min: 2, max: 8, value: st.sms,
      onInput: function (v) { st.sms = v; rebuild(); } });
    select(p.controls, { name: "mode", label: "grid", value: st.mode,
      options: [["tile", "one program per tile"], ["persistent", "persistent: one program per SM"]],
      onChange: function (v) { st.mode = v; rebuild(); } });
    var timeIn = slider(p.controls, { name: "time", label: "time", min: 0, max: 100, value: 0,
      onInput: function (v) { st.t = v; stop(); draw(); } });
    var playBtn = button(p.controls, "Play", "play", function () { if (st.playing) stop(); else play(); });
    button(p.controls, "Run to end", "end", function () { stop(); st.t = Number(timeIn.max); sync(); draw(); });
    var sched = null;

    function duration(tile) { // deterministic, uneven: programs finish in no particular order
      var x = Math.sin((tile + 1) * 12.9898 + st.tiles * 0.37) * 43758.5453;
      return 6 + Math.floor((x - Math.floor(x)) * 10);
    }

    function schedule() {
      var runs = [], P;
      if (st.mode === "persistent") {
        P = Math.min(st.sms, st.tiles);
        for (var pid = 0; pid < P; pid++) {
          var t = 0;
          for (var tile = pid; tile < st.tiles; tile += P) { // pid, pid + num_programs, ...
            var d = duration(tile);
            runs.push({ pid: pid, sm: pid, tile: tile, start: t, end: t + d });
            t += d;
          }
        }
      } else {
        P = st.tiles;
        var free = [];
        for (var k = 0; k < st.sms; k++) free.push(0);
        for (var pid2 = 0; pid2 < st.tiles; pid2++) { // the hardware hands the next program to a free SM
          var sm = 0;
          for (var j = 1; j < free.length; j++) if (free[j] < free[sm]) sm = j;
          var d2 = duration(pid2);
          runs.push({ pid: pid2, sm: sm, tile: pid2, start: free[sm], end: free[sm] + d2 });
          free[sm] += d2;
        }
      }
      var end = Math.max.apply(null, runs.map(function (r) { return r.end; }));
      return { runs: runs, programs: P, end: end };
    }

    function sync() { timeIn.value = st.t; timeIn.refresh(); }

    function rebuild() {
      stop();
      sched = schedule();
      timeIn.max = sched.end;
      st.t = 0;
      sync();
      draw();
    }

    function play() {
      if (st.t >= sched.end) st.t = 0;
      st.playing = true;
      playBtn.textContent = "Pause";
      var last = null;
      function tick(now) {
        if (!st.playing || !root.isConnected) { st.playing = false; return; }
        if (last !== null) st.t = Math.min(sched.end, st.t + (now - last) / 60);
        last = now;
        sync(); draw();
        if (st.t >= sched.end) { stop(); return; }
        requestAnimationFrame(tick);
      }
      requestAnimationFrame(tick);
    }

    function stop() { st.playing = false; playBtn.textContent = "Play"; }

    function draw() {
      clear(p.figure);
      var t = st.t, W = 640, left = 54, scale = (W - left - 6) / sched.end, lh = 30;
      var svg = svgRoot(W, st.sms * lh + 22, "Schedule of " + sched.programs + " programs on " + st.sms + " SMs");
      for (var sm = 0; sm < st.sms; sm++) {
        svg.appendChild(s("text", { x: 0, y: 8 + sm * lh + 17, class: "tit-label", text: "SM " + sm }));
        svg.appendChild(s("line", { x1: left, x2: W - 4, y1: 8 + sm * lh + lh - 3, y2: 8 + sm * lh + lh - 3,
          class: "tit-axis" }));
      }
      var finished = [];
      sched.runs.forEach(function (r) {
        if (r.start >= t) return;
        var shown = Math.min(r.end, t) - r.start, done = r.end <= t;
        if (shown <= 0) return;
        var x = left + r.start * scale, y = 8 + r.sm * lh;
        var g = s("g", { "data-role": "run", "data-pid": r.pid, "data-tile": r.tile,
          class: "tit-run tit-hue-" + (r.pid % 6) + (done ? " tit-done" : " tit-running") });
        g.appendChild(s("rect", { x: x, y: y, width: Math.max(1, shown * scale - 1.5), height: lh - 6, rx: 3 }));
        if (shown * scale > 26) g.appendChild(s("text", { x: x + 4, y: y + 16, class: "tit-run-text",
          text: st.mode === "persistent" ? "p" + r.pid + ":t" + r.tile : "p" + r.pid }));
        g.appendChild(s("title", { text: "program " + r.pid + " on SM " + r.sm + ", tile " + r.tile }));
        svg.appendChild(g);
        if (done) finished.push(r);
      });
      svg.appendChild(s("line", { x1: left + t * scale, x2: left + t * scale, y1: 2, y2: st.sms * lh + 10,
        class: "tit-cursor" }));
      p.figure.appendChild(svg);
      // The tiles, coloured by the program that owns them.
      var cols = Math.min(st.tiles, 16), cw = (W - left) / 16;
      var rows = Math.ceil(st.tiles / cols);
      var tiles = svgRoot(W, rows * 30 + 4, "Which program handles each tile");
      tiles.appendChild(s("text", { x: 0, y: 20, class: "tit-label", text: "tiles" }));
      sched.runs.forEach(function (r) {
        var state = r.end <= t ? "done" : r.start < t ? "running" : "waiting";
        var x = left + (r.tile % cols) * cw, y = 2 + Math.floor(r.tile / cols) * 30;
        var g = s("g", { "data-role": "tile", "data-tile": r.tile, "data-program": r.pid, "data-state": state,
          class: "tit-cell tit-state-" + state + " tit-hue-" + (r.pid % 6) });
        g.appendChild(s("rect", { x: x, y: y, width: cw - 2, height: 26, rx: 3 }));
        g.appendChild(s("text", { x: x + (cw - 2) / 2, y: y + 17, class: "tit-cell-text",
          text: st.mode === "persistent" ? "p" + r.pid : r.tile }));
        g.appendChild(s("title", { text: "tile " + r.tile + ": program " + r.pid + " (" + state + ")" }));
        tiles.appendChild(g);
      });
      p.figure.appendChild(tiles);
      finished.sort(function (a, b) { return a.end - b.end || a.sm - b.sm; });
      var order = finished.map(function (r) { return st.mode === "persistent" ? "t" + r.tile : r.pid; });
      var head = st.mode === "persistent"
        ? "grid = " + sched.programs + " programs (one per SM); program pid loops over tiles pid, pid + " +
          sched.programs + ", pid + " + 2 * sched.programs + ", … "
        : "grid = " + st.tiles + " programs, one per tile, handed to " + st.sms + " SMs as SMs free up. ";
      p.status.textContent = head + (order.length ? "Finished so far, in order: " + order.join(", ") + "."
        : "Press Play or drag the time slider.");
      root.dataset.mode = st.mode; root.dataset.programs = sched.programs;
      root.dataset.finishOrder = finished.map(function (r) { return r.tile; }).join(",");
    }
    rebuild();
  }

  /* ---------- 4. kernel stepper ---------- */

  var STEPS = [
    ["pid", "tl.program_id(0): this program's index in the grid."],
    ["offsets", "offsets: the BLOCK_SIZE indices this program owns."],
    ["mask", "mask: True for lanes inside the vector, False past its end."],
    ["load_x", "load x at x_ptr + offsets; masked lanes are not read (they read as 0)."],
    ["load_y", "load y at y_ptr + offsets."],
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
        else if (reached("load_y")) regs.push(["y", ly.values.map(function (v, k) { return mask[k] ? String(v) : "0"; })]);
        else if (reached("load_x")) regs.push(["x", lx.values.map(function (v, k) { return mask[k] ? String(v) : "0"; })]);
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

  /* ---------- 5. softmax timeline ---------- */

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

  /* ---------- 6. matmul tile ---------- */

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

  /* ---------- 7. strides ---------- */

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
      var perRow = 16, mw = (W - 40) / perRow, mrows = Math.ceil(storage / perRow);
      var mem = svgRoot(W, mrows * (mw + 2) + 24, "Flat memory: " + storage + " elements, the tile's addresses highlighted");
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

  /* ---------- bootstrapping ---------- */

  var WIDGETS = {
    "threads-vs-tiles": threadsVsTiles,
    "tile-partition": tilePartition,
    "programs-in-flight": programsInFlight,
    "kernel-stepper": kernelStepper,
    "softmax-timeline": softmaxTimeline,
    "matmul-tile": matmulTile,
    "strides": strides,
  };

  function initAll() {
    document.querySelectorAll(".tit-widget[data-widget]").forEach(function (root) {
      if (root.dataset.ready) return; // idempotent per element
      var fn = WIDGETS[root.dataset.widget];
      root.dataset.ready = "pending";
      if (!fn) {
        root.textContent = "Unknown widget: " + root.dataset.widget;
        root.dataset.ready = "error";
        return;
      }
      Promise.resolve()
        .then(function () { return fn(root); })
        .then(function () { root.dataset.ready = "true"; })
        .catch(function (err) {
          root.dataset.ready = "error";
          root.appendChild(h("p", { class: "tit-status", text: "This widget failed to start: " + err }));
          throw err;
        });
    });
  }

  function start() {
    if (typeof window.document$ !== "undefined" && window.document$ && window.document$.subscribe) {
      window.document$.subscribe(function () { initAll(); });
    } else if (document.readyState === "loading") {
      document.addEventListener("DOMContentLoaded", function () {
        if (typeof window.document$ !== "undefined" && window.document$.subscribe) window.document$.subscribe(initAll);
        else initAll();
      });
    } else {
      initAll();
    }
  }

  start();
})();
