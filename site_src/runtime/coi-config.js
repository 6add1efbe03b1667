// Settings for coi-serviceworker (loaded right after this classic script).
//
// Threads in onnxruntime-web need SharedArrayBuffer, which browsers only give to a
// cross-origin isolated page (COOP + COEP headers). `make serve` and the test server
// send those headers, so then nothing happens here. GitHub Pages cannot send them:
// there coi-serviceworker registers a service worker that adds them and reloads the
// page once. The guard below allows at most one such reload per minute and tab, so a
// browser that refuses isolation never ends up in a reload loop.
(function () {
  var KEY = "tx-coi-reload";
  window.coi = {
    shouldRegister: function () {
      return !window.crossOriginIsolated;
    },
    quiet: true,
    doReload: function () {
      var last = 0;
      try {
        last = Number(window.sessionStorage.getItem(KEY)) || 0;
      } catch (e) {
        return; // no sessionStorage: do not risk a loop
      }
      if (Date.now() - last < 60000) return;
      try {
        window.sessionStorage.setItem(KEY, String(Date.now()));
      } catch (e) {
        return;
      }
      window.location.reload();
    },
  };
})();
