/* Triton in Tiles widget: programs in flight (docs/widgets/programs-in-flight.html). Shared helpers: core.js. */
(function (T) {
  "use strict";
  var s = T.s, clear = T.clear, slider = T.slider, select = T.select, button = T.button, frame = T.frame, svgRoot = T.svgRoot;

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

  T.register("programs-in-flight", programsInFlight);
})(window.TIT);
