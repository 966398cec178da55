/* Triton in Tiles widget: attention blocks (docs/widgets/attention-blocks.html). Shared helpers: core.js.
 *
 * One program of attn_fwd_kernel (examples/attention.py) walking its key/value blocks: first the
 * unmasked blocks [0, n_free), then the masked ones [n_free, n_end) (the diagonal of a causal
 * program, or the ragged last block); causal programs never load the blocks past n_end. For each
 * block the widget runs the kernel's online softmax on toy numbers (scores in log2 units, exp2,
 * alpha = exp2(m_old - m_new), acc = acc * alpha + P V) and shows m, l and alpha per query.
 *
 * The numbers are a toy, not the kernel's: a seeded pseudo-random score matrix (already in log2
 * units, i.e. after the multiply by qk_scale = sm_scale * log2(e)) and one value per key
 * (head_dim = 1). The tests read them back from data attributes (data-scores on each query row,
 * data-values on the root) and redo the softmax directly.
 */
(function (T) {
  "use strict";
  var cdiv = T.cdiv, h = T.h, s = T.s, clear = T.clear, slider = T.slider, select = T.select, button = T.button,
    frame = T.frame, svgRoot = T.svgRoot, nextId = T.nextId;

  var LOG2E = 1.4426950408889634;
  var SEED = 20240917;
  var STEP_MS = 900;

  // Deterministic toy numbers: a small integer hash of (i, j), the same on every load and browser.
  function hash(a, b, seed) {
    var x = (Math.imul(a + 1, 374761393) + Math.imul(b + 1, 668265263) + seed) | 0;
    x = Math.imul(x ^ (x >>> 15), 2246822519);
    x = Math.imul(x ^ (x >>> 13), 3266489917);
    x ^= x >>> 16;
    return (x >>> 0) / 4294967296;
  }
  function score(i, j) { return Math.round((hash(i, j, SEED) * 8 - 4) * 100) / 100; } // log2 units, [-4, 4]
  function value(j) { return Math.round((hash(j, 7919, SEED ^ 0x5bd1e995) * 2 - 1) * 100) / 100; } // [-1, 1]

  /* The kernel's block plan for program pid (seq_q == seq_k == seq). */
  function plan(seq, bm, bn, causal, pid) {
    var nFree, nEnd, visits = [], skipped = [], nBlocks = cdiv(seq, bn), start;
    if (causal) { nFree = pid * bm; nEnd = Math.min(nFree + bm, seq); }
    else { nFree = Math.floor(seq / bn) * bn; nEnd = seq; }
    for (start = 0; start < nFree; start += bn) visits.push({ j: start / bn, start: start, masked: false });
    for (start = nFree; start < nEnd; start += bn) visits.push({ j: start / bn, start: start, masked: true });
    for (var j = 0; j < nBlocks; j++) if (j * bn >= nEnd) skipped.push(j);
    return { nFree: nFree, nEnd: nEnd, nBlocks: nBlocks, visits: visits, skipped: skipped };
  }

  // Does query i keep key `key` in a block of the given kind (the kernel's key_ok & causal mask)?
  function keeps(i, key, seq, causal, masked) {
    if (!masked) return true;
    return key < seq && (!causal || i >= key);
  }

  /* The online softmax of one query row over the program's visits: the state after every step. */
  function online(i, pl, seq, bn, causal) {
    var m = -Infinity, l = 0, acc = 0, hist = [{ m: m, l: l, acc: acc, alpha: null }];
    pl.visits.forEach(function (vis) {
      var sc = [], k, key, blockMax = -Infinity;
      for (k = 0; k < bn; k++) {
        key = vis.start + k;
        var sv = keeps(i, key, seq, causal, vis.masked) ? score(i, key) : -Infinity;
        sc.push(sv);
        if (sv > blockMax) blockMax = sv;
      }
      var mNew = Math.max(m, blockMax);
      var mSafe = mNew === -Infinity ? 0 : mNew; // a row that has seen only -inf (never here: see the tests)
      var alpha = Math.pow(2, m - mSafe);
      var sum = 0, pv = 0;
      for (k = 0; k < bn; k++) {
        var pk = Math.pow(2, sc[k] - mSafe);
        sum += pk;
        if (pk) pv += pk * value(vis.start + k);
      }
      l = l * alpha + sum;
      acc = acc * alpha + pv;
      m = mNew;
      hist.push({ m: m, l: l, acc: acc, alpha: alpha });
    });
    var last = hist[hist.length - 1];
    return { hist: hist, o: last.acc / last.l, lse: (last.m + Math.log2(last.l)) / LOG2E };
  }

  /* The same row computed directly (max, then sum): the widget's own check of the online result. */
  function direct(i, seq, causal) {
    var m = -Infinity, j, l = 0, pv = 0;
    var hi = causal ? Math.min(i + 1, seq) : seq;
    for (j = 0; j < hi; j++) m = Math.max(m, score(i, j));
    for (j = 0; j < hi; j++) { var p = Math.pow(2, score(i, j) - m); l += p; pv += p * value(j); }
    return { m: m, l: l, o: pv / l, lse: (m + Math.log2(l)) / LOG2E };
  }

  function fmt(x, d) {
    if (x === null || x === undefined) return "—";
    if (x === -Infinity) return "−∞";
    return (x < 0 ? "−" : "") + Math.abs(x).toFixed(d);
  }

  function attentionBlocks(root) {
    var p = frame(root, "Fused attention: the K/V blocks one program visits");
    var st = { seq: 20, bm: 8, bn: 4, pid: 1, causal: true, step: 0, playing: false, timer: null };

    var seqIn = slider(p.controls, { name: "seq", label: "seq", min: 8, max: 64, value: st.seq,
      onInput: function (v) { st.seq = v; settingsChanged(); } });
    var bmSel = select(p.controls, { name: "block_m", label: "BLOCK_M", value: st.bm,
      options: [[4, "4"], [8, "8"], [16, "16"]],
      onChange: function (v) { st.bm = Number(v); settingsChanged(); } });
    var bnSel = select(p.controls, { name: "block_n", label: "BLOCK_N", value: st.bn,
      options: [[2, "2"], [4, "4"], [8, "8"]],
      onChange: function (v) { st.bn = Number(v); settingsChanged(); } });
    var pidIn = slider(p.controls, { name: "pid", label: "query block (pid)", min: 0, max: cdiv(st.seq, st.bm) - 1,
      value: st.pid, onInput: function (v) { st.pid = v; stop(); st.step = 0; draw(); } });
    var causalId = nextId("chk");
    var causalIn = h("input", { type: "checkbox", id: causalId, "data-control": "causal", checked: st.causal });
    causalIn.addEventListener("change", function () { st.causal = causalIn.checked; settingsChanged(); });
    p.controls.appendChild(h("div", { class: "tit-control" }, [causalIn, h("label", { for: causalId, text: "causal" })]));
    var buttons = h("div", { class: "tit-control tit-att-buttons" });
    p.controls.appendChild(buttons);
    var backBtn = button(buttons, "◀ Back", "back", function () { stop(); if (st.step > 0) { st.step -= 1; draw(); } });
    var stepBtn = button(buttons, "Step ▶", "step", function () { stop(); advance(); });
    var playBtn = button(buttons, "Play", "play", function () { if (st.playing) stop(); else play(); });
    button(buttons, "Reset", "reset", function () { stop(); st.step = 0; draw(); });

    var layout = h("div", { class: "tit-att-layout" });
    var matrixBox = h("div", { class: "tit-att-matrix", tabindex: "0", "data-role": "matrix",
      "aria-label": "Score matrix; Right arrow steps, Left arrow steps back, Home resets" });
    var side = h("div", { class: "tit-att-side" });
    layout.appendChild(matrixBox); layout.appendChild(side);
    p.figure.appendChild(layout);
    var legend = h("div", { class: "tit-att-legend", "data-role": "legend" });
    p.figure.appendChild(legend);
    var note = h("p", { class: "tit-note", text: "Toy numbers, not the kernel's: the scores s are a seeded " +
      "pseudo-random matrix, already in log2 units (as after the kernel's multiply by qk_scale = sm_scale · log2 e), " +
      "and each key has one value v (head_dim = 1). m and l are the kernel's m_i and l_i, alpha = exp2(m_old − m_new). " +
      "The launcher wants BLOCK_M and BLOCK_N to be powers of two ≥ 16 with BLOCK_M a multiple of BLOCK_N; " +
      "they are shrunk here to fit on a screen." });
    p.status.after(note);

    matrixBox.addEventListener("keydown", function (e) {
      if (e.key === "ArrowRight") { stop(); advance(); }
      else if (e.key === "ArrowLeft") { stop(); if (st.step > 0) { st.step -= 1; draw(); } }
      else if (e.key === "Home") { stop(); st.step = 0; draw(); }
      else return;
      e.preventDefault();
    });

    function lastStep() { return plan(st.seq, st.bm, st.bn, st.causal, st.pid).visits.length + 1; }
    function advance() { if (st.step < lastStep()) { st.step += 1; draw(); } }

    function play() {
      if (st.step >= lastStep()) st.step = 0;
      st.playing = true;
      playBtn.textContent = "Pause";
      draw();
      function tick() {
        if (!st.playing) return;
        if (!root.isConnected) { stop(); return; }
        advance();
        if (st.step >= lastStep()) { stop(); return; }
        st.timer = setTimeout(tick, STEP_MS);
      }
      st.timer = setTimeout(tick, STEP_MS);
    }
    function stop() {
      st.playing = false;
      if (st.timer) clearTimeout(st.timer);
      st.timer = null;
      playBtn.textContent = "Play";
    }

    function settingsChanged() {
      stop();
      // The launcher's rule: BLOCK_M must be a multiple of BLOCK_N (the diagonal starts on a block edge).
      if (st.bn > st.bm) { st.bn = st.bm; bnSel.value = String(st.bn); }
      Array.prototype.forEach.call(bnSel.options, function (o) { o.disabled = Number(o.value) > st.bm; });
      var programs = cdiv(st.seq, st.bm);
      pidIn.max = programs - 1;
      if (st.pid > programs - 1) st.pid = programs - 1;
      pidIn.value = st.pid;
      pidIn.refresh();
      st.step = 0;
      draw();
    }

    function swatch(cls, mark, text) {
      var svg = s("svg", { width: 16, height: 16, viewBox: "0 0 16 16", "aria-hidden": "true", class: "tit-att-swatch" });
      svg.appendChild(s("rect", { x: 1, y: 1, width: 14, height: 14, class: "tit-att-tile " + cls }));
      if (mark) svg.appendChild(s("text", { x: 8, y: 12, class: "tit-att-mark " + cls.replace("tit-att-", "tit-att-mark-"),
        text: mark }));
      return h("span", { class: "tit-att-key" }, [svg, text]);
    }

    function drawLegend(hatch, lanes) {
      clear(legend);
      [["tit-att-visited", "✓", "loaded (done)"], ["tit-att-current", "▶", "loaded now"],
        ["tit-att-pending", "", "to load"], ["tit-att-skipped", "×", "skipped: never loaded"],
        ["tit-att-masked-lane", "", "masked lane (−∞)"], ["tit-att-other", "", "other programs' blocks"]]
        .forEach(function (k) {
          var sw = swatch(k[0], k[1], k[2]);
          var r = sw.querySelector("rect");
          if (k[0] === "tit-att-skipped") r.setAttribute("style", "fill: url(#" + hatch + ")");
          if (k[0] === "tit-att-masked-lane") r.setAttribute("style", "fill: url(#" + lanes + ")");
          legend.appendChild(sw);
        });
    }

    function draw() {
      var seq = st.seq, bm = st.bm, bn = st.bn, pid = st.pid, causal = st.causal;
      var programs = cdiv(seq, bm), pl = plan(seq, bm, bn, causal, pid);
      var nSteps = pl.visits.length, step = Math.min(st.step, nSteps + 1);
      st.step = step;
      var rowsPad = programs * bm, colsPad = pl.nBlocks * bn;
      var cell = Math.max(5, Math.min(20, Math.floor(300 / Math.max(rowsPad, colsPad))));
      var left = 44, top = 30;
      var W = left + colsPad * cell + 8, H = top + rowsPad * cell + 8;
      var svg = svgRoot(W, H, "Score matrix of " + seq + " queries by " + seq + " keys in tiles of " + bm + " x " + bn +
        "; program " + pid + " highlighted");
      matrixBox.style.flexBasis = W + "px";
      var defs = s("defs");
      var hatch = nextId("hatch"), lanes = nextId("lanes");
      var hp = s("pattern", { id: hatch, width: 6, height: 6, patternUnits: "userSpaceOnUse",
        patternTransform: "rotate(45)" });
      hp.appendChild(s("rect", { x: 0, y: 0, width: 6, height: 6, class: "tit-att-hatch-bg" }));
      hp.appendChild(s("line", { x1: 0, y1: 0, x2: 0, y2: 6, class: "tit-att-hatch-line" }));
      var lp = s("pattern", { id: lanes, width: 4, height: 4, patternUnits: "userSpaceOnUse" });
      lp.appendChild(s("rect", { x: 0, y: 0, width: 4, height: 4, class: "tit-att-lane-bg" }));
      lp.appendChild(s("circle", { cx: 2, cy: 2, r: 0.9, class: "tit-att-lane-dot" }));
      defs.appendChild(hp); defs.appendChild(lp);
      svg.appendChild(defs);
      svg.appendChild(s("text", { x: left, y: 10, class: "tit-label tit-att-axis", text: "keys (K/V blocks) →" }));
      svg.appendChild(s("text", { x: 2, y: 10, class: "tit-label tit-att-axis", text: "q ↓" }));

      var labelEvery = bn * cell >= 14 ? 1 : 2;
      for (var j = 0; j < pl.nBlocks; j++) {
        if (j % labelEvery) continue;
        svg.appendChild(s("text", { x: left + (j + 0.5) * bn * cell, y: top - 6, class: "tit-label tit-att-idx",
          "text-anchor": "middle", text: String(j) }));
      }
      var totalLoaded = 0, totalSkipped = 0, totalMasked = 0;
      var stateOf = {};
      pl.visits.forEach(function (vis, k) {
        stateOf[vis.j] = k + 1 < step ? "visited" : k + 1 === step ? "current" : "pending";
      });
      var font = Math.min(18, Math.floor(Math.min(bm, bn) * cell * 0.75));
      for (var qb = 0; qb < programs; qb++) {
        var mine = qb === pid, other = plan(seq, bm, bn, causal, qb);
        totalLoaded += other.visits.length; totalSkipped += other.skipped.length;
        totalMasked += other.visits.filter(function (v) { return v.masked; }).length;
        var y = top + qb * bm * cell;
        svg.appendChild(s("text", { x: left - 6, y: y + bm * cell / 2 + 4, "text-anchor": "end",
          class: "tit-label tit-att-idx" + (mine ? " tit-att-mine" : ""), text: (mine ? "▶ " : "") + qb }));
        for (j = 0; j < pl.nBlocks; j++) {
          var skippedHere = other.skipped.indexOf(j) >= 0;
          var visit = other.visits.filter(function (v) { return v.j === j; })[0];
          var state = mine ? (skippedHere ? "skipped" : stateOf[j]) : (skippedHere ? "other-skipped" : "other");
          var x = left + j * bn * cell;
          var g = s("g", { "data-role": "tile", "data-qblock": qb, "data-kblock": j, "data-state": state,
            "data-masked": visit && visit.masked ? "true" : "false", "data-mine": mine ? "true" : "false" });
          var r = s("rect", { x: x, y: y, width: bn * cell, height: bm * cell, class: "tit-att-tile tit-att-" + state });
          if (state === "skipped" || state === "other-skipped") r.setAttribute("style", "fill: url(#" + hatch + ")");
          g.appendChild(r);
          if (mine && visit && visit.masked) { // the masked lanes of this program's masked blocks
            for (var qi = 0; qi < bm; qi++) {
              var qq = pid * bm + qi;
              if (qq >= seq) continue;
              for (var kk = 0; kk < bn; kk++) {
                var key = j * bn + kk;
                if (keeps(qq, key, seq, causal, true)) continue;
                g.appendChild(s("rect", { x: x + kk * cell, y: y + qi * cell, width: cell, height: cell,
                  class: "tit-att-masked-lane", style: "fill: url(#" + lanes + ")", "data-role": "lane",
                  "data-query": qq, "data-key": key, "data-masked": "true" }));
              }
            }
          }
          var mark = { visited: "✓", current: "▶", skipped: "×" }[state];
          if (mark && font >= 7) g.appendChild(s("text", { x: x + bn * cell / 2, y: y + bm * cell / 2 + font * 0.36,
            "text-anchor": "middle", class: "tit-att-mark tit-att-mark-" + state, style: "font-size:" + font + "px", text: mark }));
          g.appendChild(s("title", { text: "query block " + qb + ", key block " + j + " (keys " + j * bn + ".." +
            (j * bn + bn - 1) + "): " + state.replace("-", " ") + (visit && visit.masked ? ", masked" : "") }));
          svg.appendChild(g);
        }
      }
      // Rows of the last query block past the end of the sequence: loaded as zeros, never stored.
      if (rowsPad > seq) {
        svg.appendChild(s("rect", { x: left, y: top + seq * cell, width: colsPad * cell, height: (rowsPad - seq) * cell,
          class: "tit-att-pad", "data-role": "pad-rows" }));
      }
      if (colsPad > seq) {
        svg.appendChild(s("rect", { x: left + seq * cell, y: top, width: (colsPad - seq) * cell, height: rowsPad * cell,
          class: "tit-att-pad", "data-role": "pad-cols" }));
      }
      svg.appendChild(s("rect", { x: left - 1, y: top + pid * bm * cell - 1, width: colsPad * cell + 2,
        height: bm * cell + 2, class: "tit-att-row", "data-role": "program-row" }));
      clear(matrixBox);
      matrixBox.appendChild(svg);
      drawLegend(hatch, lanes);

      // The table: one row per query of the program.
      clear(side);
      var results = [], checkErr = 0, doneAll = step === nSteps + 1;
      var table = h("table", { class: "tit-att-table", "data-role": "state-table" });
      var cap = step === 0 ? "before the loop: m = −∞, l = 0, acc = 0"
        : doneAll ? "after the loop: o = acc / l, lse = (m + log2 l) / log2 e"
          : "after block " + pl.visits[step - 1].j;
      table.appendChild(h("caption", { text: "program " + pid + ", " + cap }));
      var head = h("tr");
      ["query", "m", "l", "alpha", "o", "lse"].forEach(function (c) { head.appendChild(h("th", { scope: "col", text: c })); });
      table.appendChild(h("thead", null, head));
      var body = h("tbody");
      for (var qi2 = 0; qi2 < bm; qi2++) {
        var i = pid * bm + qi2;
        if (i >= seq) {
          body.appendChild(h("tr", { class: "tit-att-padrow", "data-role": "pad-query", "data-query": i }, [
            h("td", { text: String(i) }), h("td", { colspan: 5, text: "past the end: q loads as 0, not stored" })]));
          continue;
        }
        var on = online(i, pl, seq, bn, causal), cur = on.hist[Math.min(step, nSteps)];
        var dir = direct(i, seq, causal);
        checkErr = Math.max(checkErr, Math.abs(on.hist[nSteps].m - dir.m), Math.abs(on.hist[nSteps].l - dir.l),
          Math.abs(on.o - dir.o), Math.abs(on.lse - dir.lse));
        var alpha = step >= 1 && step <= nSteps ? cur.alpha : null;
        var rescaled = alpha !== null && alpha < 1 && alpha > 0;
        var scoresRow = [];
        for (var kj = 0; kj < seq; kj++) scoresRow.push(score(i, kj));
        var tr = h("tr", { "data-role": "query-row", "data-query": i, "data-m": String(cur.m), "data-l": String(cur.l),
          "data-acc": String(cur.acc), "data-alpha": alpha === null ? "" : String(alpha),
          "data-o": doneAll ? String(on.o) : "", "data-lse": doneAll ? String(on.lse) : "",
          "data-scores": JSON.stringify(scoresRow), class: rescaled ? "tit-att-rescaled" : null }, [
          h("th", { scope: "row", text: String(i) }),
          h("td", { text: fmt(cur.m, 2) + (rescaled ? " ↑" : "") }),
          h("td", { text: fmt(step === 0 ? 0 : cur.l, 3) }),
          h("td", { text: alpha === null ? "—" : fmt(alpha, 3) }),
          h("td", { text: doneAll ? fmt(on.o, 3) : "—" }),
          h("td", { text: doneAll ? fmt(on.lse, 3) : "—" })]);
        body.appendChild(tr);
        results.push(on);
      }
      table.appendChild(body);
      side.appendChild(h("div", { class: "tit-att-table-wrap" }, table));
      side.appendChild(h("p", { class: "tit-att-hint", text: "↑: the row's maximum grew in this block, so l and acc " +
        "were multiplied by alpha < 1." }));

      // Status line.
      var loadedCount = Math.min(step, nSteps), msg;
      var nMasked = pl.visits.filter(function (v) { return v.masked; }).length;
      var summary = "Program " + pid + " (queries " + pid * bm + ".." + (Math.min(seq, pid * bm + bm) - 1) + ") loads " +
        nSteps + " of " + pl.nBlocks + " K/V blocks (" + (nSteps - nMasked) + " unmasked, " + nMasked +
        " masked) and skips " + pl.skipped.length + ".";
      if (step === 0) {
        msg = "Before the loop: m = −∞, l = 0, acc = 0. " + summary + " Press Step.";
      } else if (step <= nSteps) {
        var vis = pl.visits[step - 1], hi = Math.min(vis.start + bn, seq) - 1;
        var laneN = matrixBox.querySelectorAll('[data-role="tile"][data-kblock="' + vis.j + '"][data-mine="true"] ' +
          '[data-role="lane"]').length;
        msg = "Step " + step + " of " + nSteps + ": block " + vis.j + " of " + pl.nBlocks + ": keys " + vis.start + ".." +
          hi + (vis.start + bn - 1 > hi ? " (+" + (vis.start + bn - 1 - hi) + " past the end)" : "") + ", loaded, " +
          (vis.masked ? "masked (" + laneN + " of " + bn * Math.min(bm, seq - pid * bm) + " scores set to −∞)"
            : "no mask") + ". Loaded " + step + " of " + nSteps + ", skipped " + pl.skipped.length +
          (pl.skipped.length ? " (" + (pl.skipped.length > 1 ? "blocks " + pl.skipped[0] + ".." +
            pl.skipped[pl.skipped.length - 1] : "block " + pl.skipped[0]) + ": above the diagonal, never loaded)" : "") + ".";
      } else {
        msg = "Done: o = acc / l and lse = (m + log2 l) / log2 e are stored. " + summary;
      }
      var full = programs * pl.nBlocks;
      msg += " All " + programs + " programs: " + totalLoaded + " block loads, " + totalSkipped + " skipped" +
        (causal ? " (" + Math.round(100 * totalLoaded / full) + "% of the " + full + " a non-causal forward loads)" : "") + ".";
      p.status.textContent = msg;

      backBtn.disabled = step === 0;
      stepBtn.disabled = step === nSteps + 1;
      var d = root.dataset;
      d.seq = seq; d.blockM = bm; d.blockN = bn; d.pid = pid; d.causal = causal ? "true" : "false";
      d.step = step; d.steps = nSteps + 1; d.loaded = loadedCount; d.visits = nSteps; d.masked = nMasked;
      d.skipped = pl.skipped.length; d.blocks = pl.nBlocks; d.nFree = pl.nFree; d.nEnd = pl.nEnd;
      d.totalLoaded = totalLoaded; d.totalSkipped = totalSkipped; d.totalMasked = totalMasked;
      d.checkError = String(checkErr);
      d.current = step >= 1 && step <= nSteps ? pl.visits[step - 1].j : "";
      var vals = [];
      for (var vj = 0; vj < seq; vj++) vals.push(value(vj));
      d.values = JSON.stringify(vals);
    }

    settingsChanged();
  }

  T.register("attention-blocks", attentionBlocks);
})(window.TIT);
