/**
 * <tx-offline>: which parts of the book this browser keeps for offline reading, how much
 * storage they take, and a button that stores everything.
 *
 * No attributes. One row per part (`tr[data-group]`: pages, python, model-runtime,
 * model-data, model-weights) with `data-offline` ("yes", "partly" or "no") and
 * `data-bytes` (bytes in Cache Storage); the model-weights row's `data-draft` says whether the
 * draft model of speculative decoding is stored ("yes", "no", or "none" without one). The element's `data-worker` says whether the
 * site's service worker controls the page ("active", "installing", "unavailable");
 * `data-persisted` is "true" or "false". The parts and their files come from the build
 * (runtime/offline-build.js, written by sitebuild/offline_hook.py); the model's weights from
 * runtime/download.js's own cache, which the model widgets fill. "Make everything
 * available offline" asks the service worker to fetch what is missing, then downloads
 * the model's weights as a model widget would (the variant this browser loads), and the draft
 * model of speculative decoding with the variant that widget loads.
 */
import { CACHE_NAME as MODEL_CACHE } from "../runtime/download.js";
import { modelsURL } from "../runtime/paths.js";
import { BATCH_INVARIANT } from "../runtime/variants.js";
import { escapeHtml, formatBytes } from "./base.js";
import { Widget, define } from "./widget.js";

const BUILD_URL = new URL("../runtime/offline-build.js", import.meta.url).href;
const SITE_ROOT = new URL("../../../", import.meta.url).href;
const WEIGHTS = "model-weights";

const STYLE = `
  table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; margin: 0.3em 0 0.6em; }
  th, td { text-align: left; padding: 0.2em 0.5em; border-bottom: 1px solid var(--tx-border); vertical-align: top; }
  td.num, th.num { text-align: right; white-space: nowrap; }
  .yes { font-weight: 600; } /* the word says it; a green would fail contrast in the dark scheme */
  .partly, .no { color: var(--tx-muted); }
  .facts { margin: 0.3em 0; }
  .facts p { margin: 0.2em 0; }
  .actions { display: flex; flex-wrap: wrap; gap: 0.6em; align-items: center; margin-top: 0.4em; }
  /* A phone: four narrow columns. A header wraps only between its words and a size stays on one
     line; only the parts' names and states may break inside a word, if a word is too long. */
  @media (max-width: 600px) {
    table { font-size: 0.9em; }
    th.num { white-space: normal; }
    th, td { padding: 0.2em 0.25em; }
    td:not(.num) { overflow-wrap: anywhere; }
  }
`;

/** "Yes", "3 of 7 files" or "No" for `have` files of `want`. */
function availability(have, want) {
  if (want > 0 && have >= want) return ["yes", "Yes"];
  if (have > 0) return ["partly", `Partly: ${have} of ${want} files`];
  return ["no", "No"];
}

/** "12.3 MB", or "10.7 GB" for a browser's storage quota. */
function formatSize(n) {
  return n >= 1e9 ? `${(n / 1e9).toFixed(1)} GB` : formatBytes(n);
}

/** Bytes of a cached response (its body's size; no copy into memory). */
async function sizeOf(response) {
  const length = Number(response.headers.get("content-length"));
  if (Number.isFinite(length) && length > 0) return length;
  return (await response.blob()).size;
}

class TxOffline extends Widget {
  template() {
    return `<style>${STYLE}</style>
      <div class="facts"><p class="worker"></p></div>
      <table hidden><thead><tr><th scope="col">Part</th><th scope="col">Available offline</th>
        <th scope="col" class="num">Stored</th><th scope="col" class="num">Full size</th></tr></thead><tbody></tbody></table>
      <div class="facts"><p class="storage"></p><p class="persist"></p></div>
      <div class="actions"><button type="button" class="fill" hidden>Make everything available offline</button></div>`;
  }

  setup() {
    this.$(".fill").addEventListener("click", () => this.makeAvailable());
    // The worker takes the page over a moment after its first visit: say so when it does.
    navigator.serviceWorker?.addEventListener("controllerchange", () => {
      if (this.dataset.state !== "loading") this.update();
    });
    this.showProgress("Looking at this browser's storage…");
  }

  /** The build's offline facts, or null when this widget is not on the book's own site. */
  async build() {
    if (new URL(SITE_ROOT).origin !== location.origin) return null;
    this.offline ??= import(BUILD_URL).then((m) => m.OFFLINE);
    return this.offline;
  }

  /** What this browser keeps: the service worker's state, one row per part (none without Cache Storage). */
  async compute() {
    const build = await this.build();
    if (!build) return { build };
    const worker = this.workerState();
    const rows = globalThis.caches ? await this.rows(build) : null;
    return { build, worker, rows };
  }

  /**
   * Draw the parts and the storage; the line says whether everything is offline.
   * @param {object} state from `compute`
   * @param {object} request
   * @param {{filled?: boolean}} [options] `filled`: after "Make everything available offline"
   */
  async draw({ build, worker, rows }, request, { filled = false } = {}) {
    if (!build) {
      this.dataset.worker = "unavailable";
      this.$(".worker").innerHTML = `This widget describes the offline copy of the book on its own site: open
        <a href="${escapeHtml(SITE_ROOT)}offline/" target="_blank" rel="noopener">Reading offline</a> there.`;
      return "";
    }
    this.dataset.worker = worker.state;
    this.$(".worker").textContent = worker.text;
    if (!rows) {
      this.$("table").hidden = true;
      this.$(".fill").hidden = true;
      this.$(".worker").textContent = "This browser offers no Cache Storage here (private mode, or storage turned off): the book works online only.";
      await this.showStorage();
      return "";
    }
    this.drawRows(rows);
    await this.showStorage();
    this.complete = rows.every((r) => r.offline === "yes");
    this.$(".fill").hidden = worker.state === "unavailable";
    this.$(".fill").textContent = this.complete ? "Check again for missing files" : "Make everything available offline";
    if (filled) return this.complete ? "Everything is available offline." : "Some files could not be stored: see the table.";
    return this.complete ? "Everything is available offline." : "";
  }

  workerState() {
    const sw = navigator.serviceWorker;
    if (!sw || !window.isSecureContext) {
      return {
        state: "unavailable",
        text: "This browser runs no service worker for this site (it needs https, and some private modes turn it off), so the book works online only.",
      };
    }
    if (sw.controller) {
      return { state: "active", text: "The offline copy is active: pages you open and runtimes you use are kept in your browser." };
    }
    return { state: "installing", text: "The offline copy is being set up (or your browser refused it): reload the page in a moment to see it active." };
  }

  /** One row per part: {group, label, have, want, bytes, total, offline}. */
  async rows(build) {
    const rows = [];
    for (const [group, { label, files, bytes: total }] of Object.entries(build.groups)) {
      let have = 0;
      let bytes = 0;
      for (const [path] of files) {
        const response = await caches.match(new URL(path, SITE_ROOT).href);
        if (!response) continue;
        have++;
        bytes += await sizeOf(response);
      }
      const [offline, text] = availability(have, files.length);
      rows.push({ group, label: group === "pages" ? `${label} (${build.pages} pages)` : label, bytes, total, offline, text });
    }
    rows.push(await this.weightsRow());
    return rows;
  }

  /** The model's weights, from runtime/download.js's cache: offline when one variant is complete. */
  async weightsRow() {
    const row = { group: WEIGHTS, label: "Model weights", bytes: 0, total: 0, offline: "no", text: "No" };
    const cache = await caches.open(MODEL_CACHE);
    const stored = new Set();
    for (const request of await cache.keys()) {
      stored.add(request.url);
      const response = await cache.match(request);
      if (response) row.bytes += await sizeOf(response);
    }
    let manifest = null;
    try {
      const index = await (await fetch(new URL("index.json", modelsURL))).json();
      const base = new URL(`${index.default}/`, modelsURL);
      manifest = await (await fetch(new URL("manifest.json", base))).json();
      const key = (f) => {
        const url = new URL(f.path, base);
        url.searchParams.set("tx-sha256", f.sha256);
        return url.href;
      };
      const tokenizer = [manifest.tokenizer.vocab, manifest.tokenizer.merges];
      const complete = manifest.variants.filter((v) => [...v.files, ...tokenizer].every((f) => stored.has(key(f))));
      const smallest = Math.min(...manifest.variants.map((v) => v.bytes));
      row.label = `Model weights (“${escapeHtml(manifest.name)}”)`;
      // Variants may share files (q8x is built from q4x's pieces): count each file once.
      const sizes = new Map(complete.flatMap((v) => v.files.map((f) => [f.path, f.bytes])));
      row.total = complete.length ? [...sizes.values()].reduce((s, n) => s + n, 0) : smallest;
      row.offline = complete.length ? "yes" : stored.size ? "partly" : "no";
      row.text = complete.length ? `Yes: ${complete.map((v) => v.name).join(", ")}` : stored.size ? "Partly: no variant complete" : "No";
      const draft = manifest.draft?.variants.find((v) => v.files.every((f) => stored.has(key(f))));
      if (manifest.draft) row.text += `; draft: ${draft ? draft.name : "no"}`; // speculative decoding's draft model
      row.draft = draft ? "yes" : manifest.draft ? "no" : "none";
      row.fullNote = complete.length ? "" : "from ";
    } catch {
      row.text = stored.size ? "Stored, but the model's list could not be read" : "No";
    }
    return row;
  }

  drawRows(rows) {
    const table = this.$("table");
    table.hidden = false;
    table.querySelector("tbody").innerHTML = rows
      .map(
        (r) => `
      <tr data-group="${r.group}" data-offline="${r.offline}" data-bytes="${r.bytes}"${r.draft ? ` data-draft="${r.draft}"` : ""}>
        <th scope="row">${r.group === WEIGHTS ? r.label : escapeHtml(r.label)}</th>
        <td class="${r.offline}">${escapeHtml(r.text)}</td>
        <td class="num">${formatBytes(r.bytes)}</td>
        <td class="num">${r.total ? (r.fullNote || "") + formatBytes(r.total) : "–"}</td></tr>`,
      )
      .join("");
  }

  async showStorage() {
    const storage = navigator.storage;
    if (!storage || !storage.estimate) {
      this.$(".storage").textContent = "This browser does not say how much storage the site uses.";
      this.$(".persist").textContent = "";
      return;
    }
    const { usage = 0, quota = 0 } = await storage.estimate();
    this.$(".storage").textContent =
      `This site uses ${formatSize(usage)} of your browser's storage` + (quota ? `, which allows it up to ${formatSize(quota)}.` : ".");
    const persisted = storage.persisted ? await storage.persisted() : false;
    this.dataset.persisted = String(persisted);
    this.$(".persist").textContent = persisted
      ? "Persistent storage is granted: the browser keeps these files until you delete the site's data."
      : "Persistent storage is not granted: the browser may delete these files when it runs short of space (the button asks for it).";
  }

  /** Fetch what is missing (service worker), then the model's weights (as a model widget would). */
  async makeAvailable() {
    const button = this.$(".fill");
    button.disabled = true;
    try {
      const build = await this.build();
      if (navigator.storage && navigator.storage.persist) await navigator.storage.persist().catch(() => false);
      const registration = await navigator.serviceWorker.ready;
      await this.fillGroups(registration.active, Object.keys(build.groups));
      this.showProgress("Downloading the model's weights…");
      const { loadModel } = await import("../runtime/model.js");
      const onProgress = (p) => this.showProgress(p.message || "Downloading the model's weights", p);
      const handle = await loadModel({ onProgress });
      handle.dispose?.();
      if (handle.info.draft) {
        // Speculative decoding scores several tokens a pass: it loads a batch-invariant variant, and the draft.
        this.showProgress("Downloading the draft model of speculative decoding…");
        const exact = await loadModel({ needs: [BATCH_INVARIANT], onProgress });
        await exact.prepareDraft();
        exact.dispose?.();
      }
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      error.retryable = true;
      this.showError(error, { retry: () => this.makeAvailable() });
      return;
    } finally {
      button.disabled = false;
    }
    await this.update({ filled: true });
  }

  /** Ask the service worker to store the groups' missing files; progress in bytes. */
  fillGroups(worker, groups) {
    if (!worker) return Promise.reject(new Error("The offline copy is not active yet: reload the page and retry."));
    return new Promise((resolve, reject) => {
      const channel = new MessageChannel();
      channel.port1.onmessage = ({ data }) => {
        if (data.type === "progress") this.showProgress("Storing the book for offline reading", data);
        else if (data.type === "done") resolve();
        else if (data.type === "error") reject(new Error(`${data.message} Check your connection and retry.`));
      };
      this.showProgress("Storing the book for offline reading…");
      worker.postMessage({ type: "fill", groups }, [channel.port2]);
    });
  }
}

define("tx-offline", TxOffline);
