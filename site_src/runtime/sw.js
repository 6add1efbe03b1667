/**
 * The site's service worker: cross-origin isolation where the host cannot send the
 * headers (GitHub Pages), and the offline copy of the book.
 *
 * The build (sitebuild/offline_hook.py) writes it to the site root as `self.TX_OFFLINE =
 * {...}` followed by this file; that object names the build's cache (`cache`: a prefix and
 * a hash of every served file), the files of each group and the folders it must not store.
 *
 * - Every response it serves carries COOP `same-origin` and COEP `require-corp` (what
 *   coi-serviceworker added), so WASM threads keep working on GitHub Pages and offline.
 * - install: the `pages` group (every page, the search index, styles, scripts, KaTeX) is
 *   stored in the build's cache; activate: caches of other builds (same prefix) are deleted,
 *   and open pages are taken over (`clients.claim`).
 * - fetch, same-origin GETs only: pages and JSON (and XML, text) network first, the cached
 *   copy when the network fails, so a new build is seen online; everything else cache
 *   first (within one build's cache files do not change). What it fetches is stored.
 *   The model's weight folders (`passThrough`) are left alone: runtime/download.js checks
 *   and keeps them in its own cache, read before any network request.
 * - message `{type: "fill", groups}` with a port: fetch what the groups miss, reporting
 *   `{type: "progress", loaded, total}`, then `{type: "done"}` or `{type: "error", message}`
 *   (the offline page's "Make everything available offline").
 * - message `{type: "remember", urls}`: store these same-origin files (what a page loaded
 *   before this worker controlled it, and the runtimes any page of this browser started:
 *   sw-register.js keeps that list) when a group lists them; then answer the page with
 *   `{type: "kept", groups: [{name, label, have, want, bytes}], complete}` for the groups
 *   stored so far, which the page turns into its "available offline" notice.
 * - a request for one of a group's `triggers` (the worker script of a runtime, the model
 *   index), fetched or remembered, stores the whole group in the background: the runtimes
 *   load inside Web Workers that may have started before this worker controlled the page.
 * - message `{type: "gap", url}` with a port: `{type: "gap", stored, online}`: whether the
 *   groups that `url` (a trigger) starts are stored in full, and whether the site's server
 *   answers. A runtime that failed to start offline then says in one sentence that it is not
 *   stored, instead of naming a download that failed.
 */
const CONFIG = self.TX_OFFLINE;
const SCOPE = self.registration.scope;
const NETWORK_FIRST = /(\/|\.html|\.json|\.xml|\.txt)$/;
const ISOLATION = { "Cross-Origin-Opener-Policy": "same-origin", "Cross-Origin-Embedder-Policy": "require-corp" };

/** Absolute URL of a site-relative path. */
const absolute = (path) => new URL(path, SCOPE).href;
const passThrough = CONFIG.passThrough.map(absolute);
/** url -> bytes, for every file some group stores. */
const known = new Map();
for (const group of Object.values(CONFIG.groups)) for (const [path, size] of group.files) known.set(absolute(path), size);
/** trigger url -> names of the groups it makes the worker store. */
const triggers = new Map();
for (const [name, group] of Object.entries(CONFIG.groups)) {
  for (const path of group.triggers) triggers.set(absolute(path), [...(triggers.get(absolute(path)) || []), name]);
}

/** The same response with the isolation headers added (opaque ones cannot be changed). */
function isolated(response) {
  if (!response || response.status === 0) return response;
  const headers = new Headers(response.headers);
  for (const [name, value] of Object.entries(ISOLATION)) headers.set(name, value);
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
}

/** The cache key of a request: the URL without its fragment (and search, for pages). */
function keyOf(url) {
  const u = new URL(url);
  u.hash = "";
  return u.href;
}

async function store(key, response) {
  if (!response.ok || response.status !== 200 || response.type === "opaque") return;
  try {
    const cache = await caches.open(CONFIG.cache);
    await cache.put(key, response);
  } catch {
    // no room left (quota) or storage refused: the page still works online
  }
}

/** Network first, the cached copy (any cache) when the network fails. */
async function networkFirst(request, key) {
  try {
    const response = await fetch(request);
    if (response.ok) await store(key, response.clone());
    return response;
  } catch (err) {
    const cached = (await caches.match(key)) || (await caches.match(key, { ignoreSearch: true }));
    if (cached) return cached;
    if (request.mode === "navigate") return offlinePage();
    throw err;
  }
}

/** Cache first (a build's files do not change), then the network, stored. */
async function cacheFirst(request, key) {
  const cached = await caches.match(key);
  if (cached) return cached;
  const response = await fetch(request);
  if (response.ok && request.headers.get("range") === null) await store(key, response.clone());
  return response;
}

function offlinePage() {
  const home = absolute("./");
  const body = `<!doctype html><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Offline</title><body style="font-family: system-ui, sans-serif; max-width: 36em; margin: 3em auto; padding: 0 1em">
<h1>You are offline</h1><p>This page was not stored for offline reading. The pages you can read offline are
listed on <a href="${absolute("offline/")}">Reading offline</a>; or go to the <a href="${home}">start page</a>.</p></body>`;
  return new Response(body, { status: 503, headers: { "content-type": "text/html; charset=utf-8" } });
}

self.addEventListener("fetch", (event) => {
  const { request } = event;
  if (request.method !== "GET" || !request.url.startsWith(self.location.origin + "/")) return;
  if (request.cache === "only-if-cached" && request.mode !== "same-origin") return;
  if (!request.url.startsWith(SCOPE) || passThrough.some((p) => request.url.startsWith(p))) return;
  if (request.headers.get("range") !== null) return; // partial content: the network, untouched
  const key = keyOf(request.url);
  const path = new URL(key).pathname;
  if (triggers.has(key)) event.waitUntil(keepGroups(triggers.get(key)));
  const answer =
    request.mode === "navigate" || NETWORK_FIRST.test(path) || request.cache === "no-cache" || request.cache === "no-store"
      ? networkFirst(request, key)
      : cacheFirst(request, key);
  event.respondWith(answer.then(isolated));
});

/** url -> promise of its download into the cache, while one runs (two fills share it). */
const downloads = new Map();

/** Download one file into `cache`, calling `onBytes(n)` as chunks arrive. */
function fetchInto(cache, url, onBytes) {
  if (downloads.has(url)) return downloads.get(url);
  const promise = (async () => {
    let response;
    try {
      response = await fetch(url, { cache: "no-cache" });
    } catch (err) {
      throw new Error(`Could not download ${new URL(url).pathname}: the network is unreachable (${err.message || err}).`);
    }
    if (!response.ok) throw new Error(`Could not download ${new URL(url).pathname}: the server answered HTTP ${response.status}.`);
    const chunks = [];
    const reader = response.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      onBytes(value.length);
    }
    await cache.put(url, new Response(new Blob(chunks), { status: 200, headers: new Headers(response.headers) }));
  })().finally(() => downloads.delete(url));
  downloads.set(url, promise);
  return promise;
}

/**
 * Fetch into the build's cache every file of `urls` that no cache holds yet.
 * @param {string[]} urls absolute URLs
 * @param {(loaded: number, total: number) => void} onProgress bytes so far, of the missing files
 */
async function fill(urls, onProgress = () => {}) {
  const cache = await caches.open(CONFIG.cache);
  const missing = [];
  for (const url of urls) if (!(await caches.match(url))) missing.push(url);
  const total = missing.reduce((sum, url) => sum + (known.get(url) || 0), 0);
  let loaded = 0;
  onProgress(loaded, total);
  const report = (n) => {
    loaded += n;
    onProgress(Math.min(loaded, total), total);
  };
  const queue = [...missing];
  const worker = async () => {
    while (queue.length) {
      const url = queue.shift();
      const shared = downloads.has(url); // another fill downloads it: count it when it is in
      await fetchInto(cache, url, shared ? () => {} : report);
      if (shared) report(known.get(url) || 0);
    }
  };
  await Promise.all(Array.from({ length: Math.min(4, missing.length) }, worker));
  return { loaded, total };
}

/** Store the groups' missing files in the background (a failure is retried on the next trigger). */
function keepGroups(names) {
  return fill(groupUrls(names)).catch(() => {});
}

/** How much of group `name` a cache holds: {name, label, have, want, bytes}. */
async function stored(name) {
  const group = CONFIG.groups[name];
  let have = 0;
  let bytes = 0;
  for (const [path, size] of group.files) {
    if (await caches.match(absolute(path))) {
      have++;
      bytes += size;
    }
  }
  return { name, label: group.label, have, want: group.files.length, bytes };
}

const PROBE_MS = 3000; // a network that has not answered by then counts as gone

/** Whether the site's server answers (this worker's own script, never from a cache). */
async function online() {
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(), PROBE_MS);
  try {
    await fetch(self.location.href, { method: "HEAD", cache: "no-store", signal: stop.signal });
    return true;
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

/** Whether every group that the trigger `url` starts is stored in full. */
async function storedFor(url) {
  for (const name of triggers.get(keyOf(url)) || []) {
    const { have, want } = await stored(name);
    if (have < want) return false;
  }
  return true;
}

const groupUrls = (names) => names.flatMap((name) => (CONFIG.groups[name]?.files || []).map(([path]) => absolute(path)));

self.addEventListener("install", (event) => {
  // The pages and the small assets every page needs; a failure leaves the old worker (or none).
  event.waitUntil(fill(groupUrls([CONFIG.precache])).then(() => self.skipWaiting()));
});

self.addEventListener("activate", (event) => {
  event.waitUntil(
    (async () => {
      for (const name of await caches.keys()) {
        if (name.startsWith(CONFIG.cachePrefix) && name !== CONFIG.cache) await caches.delete(name);
      }
      await self.clients.claim();
    })(),
  );
});

self.addEventListener("message", (event) => {
  const data = event.data || {};
  const port = event.ports[0];
  const reply = (message) => port && port.postMessage(message);
  if (data.type === "fill") {
    let last = 0;
    event.waitUntil(
      fill(groupUrls(data.groups || []), (loaded, total) => {
        const now = Date.now();
        if (now - last < 100 && loaded < total) return;
        last = now;
        reply({ type: "progress", loaded, total });
      }).then(
        () => reply({ type: "done" }),
        (err) => reply({ type: "error", message: err.message || String(err) }),
      ),
    );
  } else if (data.type === "remember") {
    const urls = (data.urls || []).map(keyOf);
    const implied = [...new Set(urls.flatMap((url) => triggers.get(url) || []))];
    const page = event.source;
    event.waitUntil(
      fill(urls.filter((url) => known.has(url)))
        .catch(() => {})
        .then(() => keepGroups(implied))
        // Only the groups this page's record names (and the pages): every page sends one.
        .then(() => Promise.all([CONFIG.precache, ...implied.filter((name) => name !== CONFIG.precache)].map(stored)))
        .then((groups) => {
          const complete = groups.every((g) => g.have === g.want);
          page?.postMessage({ type: "kept", groups: groups.filter((g) => g.have), complete, version: CONFIG.version });
        }),
    );
  } else if (data.type === "gap") {
    const url = String(data.url || "");
    event.waitUntil(Promise.all([storedFor(url), online()]).then(([stored, up]) => reply({ type: "gap", stored, online: up })));
  } else if (data.type === "version") {
    reply({ type: "version", version: CONFIG.version, cache: CONFIG.cache });
  }
});
