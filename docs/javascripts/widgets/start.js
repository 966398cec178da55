/* Triton in Tiles: start the page's widgets, once core.js and every widget have registered. */
window.TIT.start();
