// Registers the site's service worker (sw.js at the site root, see runtime/sw.js), on
// every page. The build puts `window.TX_OFFLINE = {swFile, version}` in front of this file
// (site_src/sitebuild/offline_hook.py).
//
// What the worker does for a page:
// - cross-origin isolation: threads in onnxruntime-web need SharedArrayBuffer, which
//   browsers only give to a page served with COOP + COEP. `make serve` and the test server
//   send those headers; GitHub Pages cannot, and there the worker adds them. A page that
//   is not isolated when the worker takes it over is reloaded once, so that it is. The
//   guard below allows at most one such reload per minute and tab, so a browser that
//   refuses isolation never ends up in a reload loop;
// - the offline copy: pages and assets in Cache Storage. The page that registered the
//   worker loaded its files before the worker could see them: once the worker is active,
//   this script tells it which same-origin files the page used ("remember"); the worker
//   stores them, and the runtimes they imply (see `triggers` in offline_hook.py).
//
// Registration never breaks a page: without service workers (http: on a host that is not
// localhost, some private modes, a blocked registration) the page works online as before.
(function () {
  var KEY = "tx-coi-reload";
  var config = window.TX_OFFLINE;
  var sw = navigator.serviceWorker;
  if (!config || !sw || !window.isSecureContext) return;

  function reloadOnce() {
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
  }

  // The site root: this script lives at <root>/assets/tx/runtime/sw-register.js.
  var script = document.currentScript && document.currentScript.src;
  if (!script) return;
  var root = new URL("../../../", script).href;
  var controlledAtLoad = Boolean(sw.controller);

  function tell(worker) {
    if (controlledAtLoad || !worker) return;
    var urls = [];
    try {
      urls = performance
        .getEntriesByType("resource")
        .map(function (e) {
          return e.name;
        })
        .filter(function (u) {
          return u.indexOf(root) === 0;
        });
    } catch (e) {
      // no Resource Timing: the files are stored when next used
    }
    urls.push(location.href);
    worker.postMessage({ type: "remember", urls: urls });
  }

  function register() {
    return sw
      .register(new URL(config.swFile, root).href, { scope: root })
      .then(function (registration) {
        sw.addEventListener("controllerchange", function () {
          if (!window.crossOriginIsolated) reloadOnce();
        });
        return sw.ready.then(function (ready) {
          tell(ready.active);
          if (!window.crossOriginIsolated && !controlledAtLoad && sw.controller) reloadOnce();
          return registration;
        });
      })
      .catch(function () {
        // registration refused (private mode, blocked, storage off): the page works online
      });
  }

  // A page the server isolates already (COOP/COEP headers) needs the worker only for its
  // offline copy: register it once the page's runtimes have started (runtime/quiet.js), so
  // that installing it, and the files it stores, do not slow their start (on two cores it
  // cost about 1.7 s of the first result: bench/worker.py). A page that is not isolated registers at
  // once: its threads wait for the worker.
  if (window.crossOriginIsolated) {
    window.addEventListener("load", function () {
      var quiet = window.txWhenQuiet; // set by runtime/quiet.js, which the widgets load
      (quiet ? quiet() : Promise.resolve()).then(register);
    });
  } else {
    register();
  }
})();
