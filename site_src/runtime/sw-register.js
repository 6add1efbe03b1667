// Registers the site's service worker (sw.js at the site root, see runtime/sw.js), on
// every page. The build puts `window.TX_OFFLINE = {swFile, version}` in front of this file
// (sitebuild/offline_hook.py).
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
//   stores them, and the runtimes they imply (see `triggers` in offline_hook.py). A reader
//   may leave a page before the worker is active there: every runtime a page starts is
//   recorded in localStorage (`txOffline.keep`, called by runtime/offline-use.js), and
//   every page tells the active worker the whole record, so the runtimes used anywhere in
//   the visit are stored as soon as one page has the worker. When the parts are stored, the
//   page shows a small notice (once per build and set of parts) naming them and their size;
//   `txOffline.gap` asks the worker whether a runtime that failed to start is simply not
//   stored while the network is gone.
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

  // The runtimes' triggers (worker scripts, the model index) that pages of this site started,
  // and the model files they downloaded (runtime/download.js keeps those in its own cache).
  var USED_KEY = "tx-offline-used";
  var FILES_KEY = "tx-offline-files";
  // Which stored parts the reader was last told of ("<version> <names>"), so each is said once.
  var NOTICED_KEY = "tx-offline-noticed";
  var NOTICE_MS = 12000; // how long the notice stays unless closed

  function readList(key) {
    try {
      var list = JSON.parse(window.localStorage.getItem(key) || "[]");
      return Array.isArray(list) ? list : [];
    } catch (e) {
      return []; // no localStorage: the runtimes are stored when next used under the worker
    }
  }

  function saveList(key, list) {
    try {
      window.localStorage.setItem(key, JSON.stringify(list));
    } catch (e) {
      // storage full or refused: what this page uses is still stored while the worker controls it
    }
  }

  function keep(url) {
    var href;
    try {
      href = new URL(String(url), location.href).href;
    } catch (e) {
      return;
    }
    if (href.indexOf(root) !== 0) return;
    var used = readList(USED_KEY);
    if (used.indexOf(href) < 0) {
      used = used.concat([href]);
      saveList(USED_KEY, used);
    }
    // The whole record, so that the worker's answer (and the notice) covers every part used.
    if (sw.controller) sw.controller.postMessage({ type: "remember", urls: used });
  }

  function keepFiles(baseUrl, files) {
    if (String(baseUrl).indexOf(root) !== 0 || !Array.isArray(files)) return;
    var entries = files.map(function (f) {
      return { path: f.path, bytes: f.bytes, sha256: f.sha256 };
    });
    var id =
      baseUrl +
      " " +
      entries
        .map(function (f) {
          return f.path + "@" + f.sha256;
        })
        .join(" ");
    var records = readList(FILES_KEY).filter(function (r) {
      return r.version === config.version; // another build's list goes
    });
    if (
      records.some(function (r) {
        return r.id === id;
      })
    )
      return;
    saveList(FILES_KEY, records.concat([{ id: id, version: config.version, baseUrl: baseUrl, files: entries }]));
  }

  /** Resolves {stored, online} for the runtime that `url` starts (see sw.js), or null. */
  function gap(url) {
    var worker = sw.controller;
    if (!worker) return Promise.resolve(null);
    return new Promise(function (resolve) {
      var channel = new MessageChannel();
      var timer = setTimeout(function () {
        resolve(null);
      }, 5000);
      channel.port1.onmessage = function (event) {
        clearTimeout(timer);
        resolve(event.data || null);
      };
      worker.postMessage({ type: "gap", url: String(url) }, [channel.port2]);
    });
  }

  window.txOffline = { keep: keep, keepFiles: keepFiles, gap: gap };

  /**
   * Store the recorded model files that runtime/download.js's cache lacks (a page left while
   * they downloaded); resolves the "Model weights" part for the notice, or null.
   */
  function completeFiles() {
    // Another build's records may name files that changed since: the model is loaded afresh then.
    var records = readList(FILES_KEY).filter(function (r) {
      return r.version === config.version;
    });
    if (!records.length || !window.caches) return Promise.resolve(null);
    return import(new URL("assets/tx/runtime/download.js", root).href)
      .then(function (download) {
        var bytes = {};
        return records
          .reduce(function (done, r) {
            r.files.forEach(function (f) {
              bytes[new URL(f.path, r.baseUrl).href] = f.bytes;
            });
            return done.then(function (all) {
              return download.keepFiles(r.files, { baseUrl: r.baseUrl }).then(function (ok) {
                return all && ok;
              });
            });
          }, Promise.resolve(true))
          .then(function (all) {
            var total = Object.keys(bytes).reduce(function (sum, url) {
              return sum + bytes[url];
            }, 0);
            return all ? { name: "model-weights", label: "Model weights", have: 1, want: 1, bytes: total } : null;
          });
      })
      .catch(function () {
        return null; // offline, or the files changed: tried again on the next page
      });
  }
  var weights = null; // the "Model weights" part once completeFiles has stored them

  function tell(worker) {
    if (!worker) return;
    completeFiles().then(function (part) {
      weights = part;
      remember(worker);
    });
  }

  function remember(worker) {
    var urls = [];
    if (!controlledAtLoad) {
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
    }
    urls = urls.concat(readList(USED_KEY));
    if (urls.length) worker.postMessage({ type: "remember", urls: urls });
  }

  function megabytes(bytes) {
    return (bytes / 1e6).toFixed(1) + " MB";
  }

  /** The worker's answer to "remember": say once which parts are stored now, and their size. */
  function notice(data) {
    var parts = (data.groups || []).concat(weights ? [weights] : []).filter(function (g) {
      return g.have === g.want;
    });
    if (!data.complete || !parts.length) return;
    var said =
      data.version +
      " " +
      parts
        .map(function (g) {
          return g.name;
        })
        .join(",");
    try {
      if (window.localStorage.getItem(NOTICED_KEY) === said) return;
      window.localStorage.setItem(NOTICED_KEY, said);
    } catch (e) {
      return; // without storage it would be said on every page
    }
    var bytes = parts.reduce(function (sum, g) {
      return sum + g.bytes;
    }, 0);
    var box = document.createElement("div");
    box.className = "tx-offline-notice";
    box.setAttribute("role", "status");
    var text = document.createElement("p");
    text.textContent =
      "Available offline now: " +
      parts
        .map(function (g) {
          return g.label;
        })
        .join("; ") +
      " (" +
      megabytes(bytes) +
      " in this browser). ";
    var link = document.createElement("a");
    link.href = new URL("offline/", root).href;
    link.textContent = "Reading offline";
    var close = document.createElement("button");
    close.type = "button";
    close.setAttribute("aria-label", "Close this notice");
    close.textContent = "×";
    close.addEventListener("click", function () {
      box.remove();
    });
    text.append(link);
    box.append(text, close);
    document.querySelectorAll(".tx-offline-notice").forEach(function (old) {
      old.remove();
    });
    document.body.append(box);
    setTimeout(function () {
      box.remove();
    }, NOTICE_MS);
  }

  sw.addEventListener("message", function (event) {
    if (event.data && event.data.type === "kept") notice(event.data);
  });
  sw.startMessages(); // a worker's answer may come before the document has finished loading

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
