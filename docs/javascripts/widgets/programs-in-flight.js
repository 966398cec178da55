/* Triton in Tiles widget: programs in flight (docs/widgets/programs-in-flight.html). Shared helpers: core.js.
 *
 * Two sources:
 * - "measured": schedules recorded on the GPU by benchmarks/cases/schedules.py (assets/data/schedules.json,
 *   shipped by scripts/schedules.py): one lane per SM, a bar per program (or per tile of a persistent
 *   program) from its start to its end, coloured by program; concurrent programs of one SM share its lane
 *   in thin rows. The default when the file holds traces.
 * - "toy": a handful of tiles on a few SMs with made-up durations, to follow program by program.
 * Without measured traces only the toy is shown (the select for the source is left out).
 */
(function (T) {
  "use strict";
  var s = T.s, h = T.h, clear = T.clear, slider = T.slider, select = T.select, button = T.button, frame = T.frame,
    svgRoot = T.svgRoot, loadData = T.loadData, siteUrl = T.siteUrl, fmtInt = T.fmtInt;

  var TICKS = 500; // the time slider's steps over a measured trace
  var PLAY_MS = 6000; // a measured trace plays in about this long

  function validTraces(doc) {
    var traces = (doc && Array.isArray(doc.traces)) ? doc.traces : [];
    return traces.filter(function (tr) {
      return tr && Array.isArray(tr.runs) && tr.runs.length > 0 && tr.runs.every(function (r) {
        return isFinite(r.start_us) && isFinite(r.end_us) && isFinite(r.sm) && isFinite(r.pid) && r.end_us >= r.start_us;
      });
    });
  }

  // Sub-rows within each SM's lane: greedy, so programs resident at once on one SM get a row each.
  function prepare(tr) {
    var runs = tr.runs.map(function (r) {
      return { pid: +r.pid, tile: r.tile === undefined ? +r.pid : +r.tile, sm: +r.sm, start: +r.start_us,
        end: +r.end_us, slot: 0 };
    });
    var t0 = Math.min.apply(null, runs.map(function (r) { return r.start; }));
    runs.forEach(function (r) { r.start -= t0; r.end -= t0; });
    var bySm = {};
    runs.forEach(function (r) { (bySm[r.sm] = bySm[r.sm] || []).push(r); });
    var slots = 1;
    Object.keys(bySm).forEach(function (k) {
      var free = [];
      bySm[k].sort(function (a, b) { return a.start - b.start || a.pid - b.pid; }).forEach(function (r) {
        var j = 0;
        while (j < free.length && free[j] > r.start) j++;
        r.slot = j;
        free[j] = r.end;
      });
      slots = Math.max(slots, free.length);
    });
    var smCount = Math.max(+tr.sm_count || 0, Math.max.apply(null, runs.map(function (r) { return r.sm; })) + 1);
    var end = Math.max.apply(null, runs.map(function (r) { return r.end; }));
    var programs = {};
    runs.forEach(function (r) { programs[r.pid] = 1; });
    return { tr: tr, runs: runs, slots: slots, sms: smCount, end: end > 0 ? end : 1,
      programs: Object.keys(programs).length, persistent: runs.length > Object.keys(programs).length };
  }

  function niceStep(span) {
    var raw = span / 5, p = Math.pow(10, Math.floor(Math.log10(raw)));
    var m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
  }

  function fmtUs(v) { return v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2); }

  function programsInFlight(root) {
    var p = frame(root, "Programs in flight on the SMs");
    p.status.textContent = "Loading the measured schedules…";
    return loadData("schedules.json").then(function (doc) { build(root, p, doc); });
  }

  function build(root, p, doc) {
    var traces = validTraces(doc);
    var st = { source: traces.length ? "measured" : "toy", trace: 0, zoom: "all",
      tiles: 24, sms: 4, mode: "tile", t: 0, playing: false };
    var sched = null, meas = null, svgParts = null;
    clear(p.controls);
    function group() {
      var g = h("div", { class: "tit-control-group", style: "display: contents" });
      p.controls.appendChild(g);
      return g;
    }
    if (traces.length) {
      select(p.controls, { name: "source", label: "schedule", value: st.source,
        options: [["measured", "measured on the " + (doc.gpu || "GPU")], ["toy", "toy: a few SMs"]],
        onChange: function (v) { st.source = v; rebuild(); } });
    }
    var measuredBox = group(), toyBox = group(), common = group();
    if (traces.length) {
      select(measuredBox, { name: "trace", label: "kernel", value: 0,
        options: traces.map(function (tr, i) { return [i, tr.label || tr.name || "trace " + i]; }),
        onChange: function (v) { st.trace = Number(v); rebuild(); } });
      select(measuredBox, { name: "zoom", label: "SMs", value: st.zoom,
        options: [["all", "all"], ["16", "the first 16"]],
        onChange: function (v) { st.zoom = v; rebuild(); } });
    }
    slider(toyBox, { name: "tiles", label: "tiles", min: 4, max: 48, value: st.tiles,
      onInput: function (v) { st.tiles = v; rebuild(); } });
    slider(toyBox, { name: "sms", label: "SMs", min: 2, max: 8, value: st.sms,
      onInput: function (v) { st.sms = v; rebuild(); } });
    select(toyBox, { name: "mode", label: "grid", value: st.mode,
      options: [["tile", "one program per tile"], ["persistent", "persistent: one program per SM"]],
      onChange: function (v) { st.mode = v; rebuild(); } });
    var timeIn = slider(common, { name: "time", label: "time", min: 0, max: 100, value: 0,
      fmt: function (v) { return st.source === "measured" && meas ? fmtUs(v / TICKS * meas.end) + " µs" : String(v); },
      onInput: function (v) { st.t = toTime(v); stop(); draw(); } });
    var playBtn = button(common, "Play", "play", function () { if (st.playing) stop(); else play(); });
    button(common, "Run to end", "end", function () { stop(); st.t = endTime(); sync(); draw(); });

    function measured() { return st.source === "measured"; }
    function endTime() { return measured() ? meas.end : sched.end; }
    function toTime(v) { return measured() ? v / TICKS * meas.end : v; }
    function toTicks(t) { return measured() ? Math.round(t / meas.end * TICKS) : t; }

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

    function sync() { timeIn.value = toTicks(st.t); timeIn.refresh(); }

    function rebuild() {
      stop();
      measuredBox.style.display = measured() ? "contents" : "none";
      toyBox.style.display = measured() ? "none" : "contents";
      if (measured()) {
        meas = prepare(traces[st.trace]);
        timeIn.max = TICKS;
        st.t = meas.end; // a recorded schedule opens finished: the whole picture first
        buildMeasured();
      } else {
        sched = schedule();
        timeIn.max = sched.end;
        st.t = 0;
        svgParts = null;
      }
      sync();
      draw();
    }

    function play() {
      if (st.t >= endTime()) st.t = 0;
      st.playing = true;
      playBtn.textContent = "Pause";
      var last = null;
      function tick(now) {
        if (!st.playing || !root.isConnected) { st.playing = false; return; }
        if (last !== null) {
          var rate = measured() ? meas.end / PLAY_MS : 1 / 60;
          st.t = Math.min(endTime(), st.t + (now - last) * rate);
        }
        last = now;
        sync(); draw();
        if (st.t >= endTime()) { stop(); return; }
        requestAnimationFrame(tick);
      }
      requestAnimationFrame(tick);
    }

    function stop() { st.playing = false; playBtn.textContent = "Play"; }

    function draw() {
      if (measured()) drawMeasured(); else drawToy();
      root.dataset.source = st.source;
    }

    /* ---------- measured ---------- */

    function buildMeasured() {
      clear(p.figure);
      var m = meas, zoom = st.zoom !== "all";
      var shown = [];
      for (var k = 0; k < (zoom ? Math.min(16, m.sms) : m.sms); k++) shown.push(k);
      var laneOf = {};
      shown.forEach(function (sm, i) { laneOf[sm] = i; });
      var W = 640, left = 54, right = 8, top = 4;
      var lh = zoom ? Math.max(18, 6 * m.slots + 4) : 4, gap = zoom ? 3 : 0.7;
      var plotW = W - left - right, scale = plotW / m.end;
      var lanesH = shown.length * lh, busyTop = top + lanesH + 26, busyH = 40;
      var H = busyTop + busyH + 18;
      var svg = svgRoot(W, H, (m.tr.label || m.tr.name) + ": " + m.runs.length + " runs on " + m.sms + " SMs, measured");
      svg.setAttribute("data-role", "measured-schedule");
      shown.forEach(function (sm, i) {
        var y = top + i * lh;
        svg.appendChild(s("rect", { x: left, y: y, width: plotW, height: lh - gap, class: "tit-lane",
          "data-role": "lane", "data-sm": sm }));
        if (zoom || sm % 16 === 0) {
          svg.appendChild(s("text", { x: left - 4, y: y + (zoom ? lh / 2 + 4 : 9), class: "tit-label",
            "text-anchor": "end", text: "SM " + sm }));
        }
      });
      // The time axis, in µs.
      var step = niceStep(m.end), axisY = top + lanesH + 4;
      svg.appendChild(s("line", { x1: left, x2: W - right, y1: axisY, y2: axisY, class: "tit-axis" }));
      for (var v = 0; v <= m.end + 1e-9; v += step) {
        svg.appendChild(s("line", { x1: left + v * scale, x2: left + v * scale, y1: axisY, y2: axisY + 4,
          class: "tit-axis" }));
        svg.appendChild(s("text", { x: left + v * scale, y: axisY + 16, class: "tit-label", "text-anchor": "middle",
          text: String(Math.round(v * 1000) / 1000) }));
      }
      svg.appendChild(s("text", { x: 0, y: axisY + 16, class: "tit-label", text: "µs" }));
      var bars = [], subH = (lh - gap) / m.slots;
      m.runs.forEach(function (r) {
        if (!(r.sm in laneOf)) return;
        var rect = s("rect", { x: left + r.start * scale, y: top + laneOf[r.sm] * lh + r.slot * subH,
          width: 0, height: Math.max(0.6, subH - (zoom ? 1 : 0.15)),
          class: "tit-bar tit-hue-" + (r.pid % 6), "data-role": "run", "data-pid": r.pid, "data-tile": r.tile,
          "data-sm": r.sm });
        rect.appendChild(s("title", { text: "program " + r.pid + (m.persistent ? ", tile " + r.tile : "") + " on SM " +
          r.sm + ": " + fmtUs(r.start) + "–" + fmtUs(r.end) + " µs" }));
        svg.appendChild(rect);
        bars.push([r, rect]);
      });
      // SMs busy over time: the waves and the tail at a glance.
      var N = 240, pts = [], busy = [];
      for (var i = 0; i <= N; i++) {
        var t = m.end * i / N, set = {};
        m.runs.forEach(function (r) { if (r.start <= t && r.end > t) set[r.sm] = 1; });
        busy.push(Object.keys(set).length);
      }
      busy.forEach(function (b, i2) {
        pts.push((left + plotW * i2 / N).toFixed(1) + "," + (busyTop + busyH - busyH * b / m.sms).toFixed(1));
      });
      svg.appendChild(s("text", { x: 0, y: busyTop + 10, class: "tit-label", text: "busy" }));
      svg.appendChild(s("text", { x: 0, y: busyTop + 24, class: "tit-label", text: "SMs" }));
      svg.appendChild(s("line", { x1: left, x2: W - right, y1: busyTop + busyH, y2: busyTop + busyH, class: "tit-axis" }));
      svg.appendChild(s("line", { x1: left, x2: W - right, y1: busyTop, y2: busyTop, class: "tit-axis tit-axis-faint" }));
      svg.appendChild(s("polyline", { points: pts.join(" "), class: "tit-busy", "data-role": "busy" }));
      var cursor = s("line", { y1: 0, y2: H - 14, class: "tit-cursor" });
      svg.appendChild(cursor);
      p.figure.appendChild(svg);
      var note = h("p", { class: "tit-note", "data-role": "provenance" }, [
        "Measured on " + (m.tr.gpu || doc.gpu || "a GPU") +
        (m.tr.date || doc.date ? ", " + String(m.tr.date || doc.date).slice(0, 10) : "") +
        ", with %smid and %globaltimer read at each program's start and end" +
        (m.tr.kernel ? "; kernel " + m.tr.kernel : "") + ". ",
        h("a", { href: siteUrl("benchmarks/guide/#persistent-vs-non-persistent-grids"), text: "How they were recorded" }),
        "."]);
      p.figure.appendChild(note);
      svgParts = { bars: bars, cursor: cursor, left: left, scale: scale, lanes: shown.length };
    }

    function drawMeasured() {
      var m = meas, t = st.t, running = 0, done = 0, busy = {};
      svgParts.bars.forEach(function (pair) {
        var r = pair[0], rect = pair[1], state;
        if (r.start > t || (r.start === t && t < m.end)) state = "waiting";
        else if (r.end <= t) state = "done";
        else state = "running";
        var w = state === "waiting" ? 0 : (Math.min(r.end, t) - r.start) * svgParts.scale;
        rect.setAttribute("width", Math.max(state === "waiting" ? 0 : 0.8, w).toFixed(2));
        rect.setAttribute("data-state", state);
        rect.setAttribute("class", "tit-bar tit-hue-" + (r.pid % 6) + (state === "running" ? " tit-running" : "") +
          (state === "waiting" ? " tit-waiting" : ""));
      });
      m.runs.forEach(function (r) {
        if (r.start <= t && r.end > t) { running++; busy[r.sm] = 1; } else if (r.end <= t) done++;
      });
      var x = svgParts.left + t * svgParts.scale;
      svgParts.cursor.setAttribute("x1", x);
      svgParts.cursor.setAttribute("x2", x);
      var nBusy = Object.keys(busy).length, unit = m.persistent ? "tiles" : "programs";
      p.status.textContent = (m.tr.label || m.tr.name) + ": grid = " + fmtInt(m.tr.grid || m.programs) + " programs" +
        (m.persistent ? " looping over " + fmtInt(m.runs.length) + " tiles (rows)" : ", one per row") + ", on " +
        m.sms + " SMs. At " +
        fmtUs(t) + " of " + fmtUs(m.end) + " µs: " + nBusy + " SMs busy, " + (m.sms - nBusy) + " idle; " + running +
        " " + unit + " running, " + done + " done." + (st.zoom !== "all" ? " Showing SMs 0–" + (svgParts.lanes - 1) + "." : "");
      root.dataset.mode = m.persistent ? "persistent" : "tile";
      root.dataset.trace = m.tr.name || String(st.trace);
      root.dataset.programs = m.programs;
      root.dataset.runs = m.runs.length;
      root.dataset.lanes = svgParts.lanes;
      root.dataset.busy = nBusy;
      root.dataset.finishOrder = "";
    }

    /* ---------- toy ---------- */

    function drawToy() {
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
        ? "Toy schedule, made-up durations: grid = " + sched.programs + " programs (one per SM); program pid loops " +
          "over tiles pid, pid + " + sched.programs + ", pid + " + 2 * sched.programs + ", … "
        : "Toy schedule, made-up durations: grid = " + st.tiles + " programs, one per tile, handed to " + st.sms +
          " SMs as SMs free up. ";
      p.status.textContent = head + (order.length ? "Finished so far, in order: " + order.join(", ") + "."
        : "Press Play or drag the time slider.");
      root.dataset.mode = st.mode; root.dataset.programs = sched.programs;
      root.dataset.finishOrder = finished.map(function (r) { return r.tile; }).join(",");
      delete root.dataset.trace; delete root.dataset.runs; delete root.dataset.lanes; delete root.dataset.busy;
    }

    root.dataset.measuredTraces = traces.length;
    rebuild();
  }

  T.register("programs-in-flight", programsInFlight);
})(window.TIT);
