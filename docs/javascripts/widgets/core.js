/* Triton in Tiles: the widgets' shared core (helpers, a registry, start-up).
 *
 * Every widget is a `<div class="tit-widget" data-widget="NAME">` included from
 * docs/widgets/NAME.html, and its code is docs/javascripts/widgets/NAME.js, which calls
 * `TIT.register(NAME, fn)`. mkdocs.yml loads this file first, then every widget, then
 * start.js, which initialises the page's widgets. Initialisation runs from Material's `document$` (so it
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
  // The site root, from this script's own URL (javascripts/widgets/core.js): works under a sub-path.
  var SCRIPT_SRC = (document.currentScript && document.currentScript.src) || "";
  var SITE_ROOT = SCRIPT_SRC ? new URL("../../", SCRIPT_SRC) : new URL("./", document.baseURI);
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

  // A page of the site by its path from the root ("benchmarks/guide/#persistent"), as an absolute URL.
  function siteUrl(path) { return new URL(path, SITE_ROOT).href; }

  function loadData(name) {
    if (!dataCache[name]) {
      dataCache[name] = fetch(new URL("assets/data/" + name, SITE_ROOT).href)
        .then(function (r) { return r.ok ? r.json() : null; })
        .catch(function () { return null; });
    }
    return dataCache[name];
  }


  /* ---------- bootstrapping ---------- */

  var WIDGETS = {};

  function register(name, fn) { WIDGETS[name] = fn; }

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

  window.TIT = {
    cdiv: cdiv, h: h, s: s, setAttrs: setAttrs, append: append, clear: clear, fmtInt: fmtInt,
    fmtBytes: fmtBytes, nextId: nextId, slider: slider, select: select, button: button, frame: frame,
    svgRoot: svgRoot, loadData: loadData, siteUrl: siteUrl, register: register, start: start,
  };
})();
