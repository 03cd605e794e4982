// The upload panel: Uppy's dashboard over tus (/api/v1/tus/), resumed
// after a network drop or a reload (Golden Retriever), with the console's
// own summary line (files, MiB, time left).
import { useState, useEffect, useRef } from 'preact/hooks';
import Uppy from '@uppy/core';
import Dashboard from '@uppy/dashboard';
import Tus from '@uppy/tus';
import GoldenRetriever from '@uppy/golden-retriever';
import { token, formatBytes } from './api.js';
import { html, Banner } from './ui.js';
import { throttleProgress } from './progress.js';
import { wholeFileReader } from './filesource.js';

// PENDING marks (in localStorage, a flag and nothing else) that uploads
// started and have not all completed, so that the browser page opens the
// upload panel after a reload and Golden Retriever resumes them.
const PENDING = 'coffer.uploads-pending';

export function uploadsPending() {
  try {
    return localStorage.getItem(PENDING) === '1';
  } catch {
    return false;
  }
}

function setUploadsPending(on) {
  try {
    if (on) localStorage.setItem(PENDING, '1');
    else localStorage.removeItem(PENDING);
  } catch {
    /* storage unavailable: no automatic reopening */
  }
}

/**
 * forgetUploads drops what the browser keeps for resuming uploads (the
 * flag, tus-js-client's upload URLs, Golden Retriever's IndexedDB): at
 * sign-out, so the next account on this browser inherits nothing.
 */
export function forgetUploads() {
  try {
    setUploadsPending(false);
    for (let i = localStorage.length - 1; i >= 0; i--) {
      const k = localStorage.key(i);
      if (k && (k.startsWith('tus::') || k.startsWith('uppyState:'))) localStorage.removeItem(k);
    }
    indexedDB.deleteDatabase('uppy-blobs');
  } catch {
    /* storage unavailable: nothing kept */
  }
}

/**
 * savedPanelState resolves whether Golden Retriever keeps a saved state
 * for the panel id (its record in IndexedDB, not expired): only then does
 * its restore come, announced by 'restored'. Unknown (an error): true.
 */
async function savedPanelState(id) {
  const req = (r) =>
    new Promise((ok, bad) => {
      r.onsuccess = () => ok(r.result);
      r.onerror = () => bad(r.error);
    });
  try {
    if (!(await indexedDB.databases()).some((d) => d.name === 'uppy-blobs')) return false;
    const db = await req(indexedDB.open('uppy-blobs'));
    try {
      if (!db.objectStoreNames.contains('metadata')) return false;
      const rec = await req(db.transaction('metadata').objectStore('metadata').get(id));
      return !!rec && !(rec.expires < Date.now());
    } finally {
      db.close();
    }
  } catch {
    return true;
  }
}

/** tusErrorText turns a tus error's response into title/detail text. */
function tusErrorText(err) {
  const res = err && err.originalResponse;
  if (!res) return (err && err.message) || 'Upload failed';
  const status = res.getStatus();
  let text = `HTTP ${status}`;
  const body = res.getBody() || '';
  try {
    const p = JSON.parse(body);
    text = p.detail ? `${p.title}: ${p.detail}` : p.title || text;
  } catch {
    if (status === 460) text = 'Checksum mismatch: the bytes received do not match, nothing of this chunk was stored';
    else if (body) text = `${text}: ${body.slice(0, 200)}`;
  }
  if (status === 429) {
    const ra = res.getHeader('Retry-After');
    if (ra) text += ` Try again in ${ra} s.`;
  }
  return text;
}

/**
 * listRole works around Uppy 6's dashboard: with a single file its list is
 * a plain <div> while the file keeps role="listitem" (axe's
 * aria-required-parent, critical). It gives such a list its role, for as
 * long as the dashboard lives in el; it returns the stop function.
 */
export function listRole(el) {
  const fix = () => el.querySelectorAll('.uppy-Dashboard-files:not([role])').forEach((d) => d.setAttribute('role', 'list'));
  const mo = new MutationObserver(fix);
  mo.observe(el, { childList: true, subtree: true });
  fix();
  return () => mo.disconnect();
}

function duration(s) {
  if (s < 1) return 'less than a second';
  if (s < 60) return `${Math.round(s)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${Math.round(s % 60)} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

/**
 * summaryOf describes the upload batch: the files in Uppy (the panel
 * keeps one batch: a finished batch leaves when new files come), the
 * bytes, and the time left from the batch's average speed since its
 * first progress (steady, unlike an instant rate over tiny intervals).
 */
function summaryOf(files, clock) {
  if (!files.length) return '';
  const n = files.length;
  const done = files.filter((f) => f.progress.uploadComplete).length;
  const total = files.reduce((s, f) => s + (f.size || 0), 0);
  const sent = files.reduce((s, f) => s + (f.progress.uploadComplete ? f.size || 0 : f.progress.bytesUploaded || 0), 0);
  const noun = n === 1 ? 'file' : 'files';
  if (done === n) {
    const took = clock.end && clock.start ? ` in ${duration((clock.end - clock.start) / 1000)}` : '';
    return `${n} ${noun} uploaded, ${formatBytes(total)}${took}.`;
  }
  let left = '';
  const elapsed = clock.start ? (performance.now() - clock.start) / 1000 : 0;
  const moved = sent - clock.base;
  if (elapsed >= 1 && moved > 0) left = `, about ${duration((total - sent) / (moved / elapsed))} left`;
  return `${done} of ${n} ${noun} done, ${formatBytes(sent)} of ${formatBytes(total)}${left}.`;
}

export function Upload({ bucket, prefix, onDone, onClose }) {
  const target = useRef(null);
  const where = useRef({ bucket, prefix, onClose });
  where.current = { bucket, prefix, onClose };
  const [errors, setErrors] = useState([]);
  const [summary, setSummary] = useState('');
  useEffect(() => {
    // Golden Retriever's restore reads IndexedDB and then replaces Uppy's
    // whole file list: a file added before that read ended vanished from
    // the panel, its upload running on unseen (seen in CI under load). So
    // files added while a restore may still come are held (held), and
    // added once it is done, or known not to come, or after 10 s.
    let held = [];
    const uppy = new Uppy({
      autoProceed: true,
      id: 'console-upload',
      onBeforeFileAdded: (file, files) => {
        if (!held) return !Object.hasOwn(files, file.id); // Uppy's own: no duplicates
        held.push(file);
        return false;
      },
    });
    const restoreDone = () => {
      if (!held) return;
      const files = held;
      held = null;
      clearTimeout(unhold);
      if (files.length) uppy.addFiles(files.map(({ name, type, data, meta, source }) => ({ name, type, data, meta, source })));
    };
    const unhold = setTimeout(restoreDone, 10000);
    savedPanelState('console-upload').then((saved) => saved || restoreDone());
    throttleProgress(uppy);
    // clock: when the batch's bytes started moving (start, with the bytes
    // already there: base), and when it ended.
    let clock = { start: 0, base: 0, end: 0 };
    let frame = 0;
    const update = () => {
      cancelAnimationFrame(frame);
      frame = requestAnimationFrame(() => setSummary(summaryOf(uppy.getFiles(), clock)));
    };
    uppy.use(Dashboard, {
      inline: true,
      target: target.current,
      height: 300,
      width: '100%',
      hideProgressDetails: true, // the summary line below says it, in MiB, with a steady time left
      proudlyDisplayPoweredByUppy: false,
      fileManagerSelectionType: 'both',
      theme: 'auto',
      note: 'Files and folders; uploads resume after a network drop or a page reload.',
      doneButtonHandler: () => {
        uppy.clear();
        setSummary('');
        where.current.onClose();
      },
    });
    // Golden Retriever keeps the file list (names, sizes, meta, the tus
    // upload URL; never a token) and the files' bytes in IndexedDB, so
    // after a reload the uploads come back and resume from the server's
    // offset. Bigger files than the limits come back as "ghosts" to pick
    // again (tus then resumes them by fingerprint).
    uppy.use(GoldenRetriever, {
      serviceWorker: false,
      indexedDB: { maxFileSize: 256 << 20, maxTotalSize: 1024 << 20 },
    });
    // Uploads cut short by a reload resume at once; what ended with
    // errors (or lost its bytes: a "ghost") waits for the user's click.
    uppy.on('restored', () => {
      const files = uppy.getFiles();
      if (uploadsPending() && files.length && !files.some((f) => f.isGhost)) uppy.emit('restore-confirmed');
      restoreDone();
      update();
    });
    uppy.on('upload', () => {
      setUploadsPending(true);
      clock = { start: 0, base: 0, end: 0 };
    });
    uppy.use(Tus, {
      endpoint: '/api/v1/tus/',
      retryDelays: [0, 1000, 3000, 5000, 10000],
      removeFingerprintOnSuccess: true,
      // One PATCH per file (tus-js-client's chunkSize Infinity), and that
      // PATCH sends the File itself unless it resumes (src/filesource.js).
      fileReader: wholeFileReader,
      allowedMetaFields: ['bucket', 'key', 'filetype'],
      // Retry what a retry can fix: a dropped connection, 5xx, an offset
      // conflict (409, e.g. after the browser re-sent a cut PATCH) or a
      // lock (423); each retry asks HEAD for the offset first. Refusals
      // (4xx, a full quota 507, 429 with its wait time) are shown at once.
      // Deciding here also keeps Uppy's re-queueing out of the retry path
      // (it could leave a retry waiting forever after a 409).
      onShouldRetry(err) {
        const status = (err && err.originalResponse && err.originalResponse.getStatus()) || 0;
        if (status === 409 || status === 423) return true;
        if (status >= 400 && status < 500) return false;
        if (status === 501 || status === 507) return false;
        return true;
      },
      async onBeforeRequest(req) {
        req.setHeader('Authorization', `Bearer ${await token()}`);
      },
    });
    uppy.on('file-added', (file) => {
      const rel = (file.meta && file.meta.relativePath) || file.name;
      const { bucket: b, prefix: p } = where.current;
      uppy.setFileMeta(file.id, { bucket: b, key: p + rel.replace(/^\/+/, ''), filetype: file.type || 'application/octet-stream' });
    });
    // A new batch after a finished one ("Add more"): the finished files
    // leave the panel, so its counts and sizes are the new batch's.
    uppy.on('files-added', (added) => {
      const fresh = new Set(added.map((f) => f.id));
      const files = uppy.getFiles();
      const old = files.filter((f) => !fresh.has(f.id));
      if (old.length && old.every((f) => f.progress.uploadComplete)) {
        for (const f of old) uppy.removeFile(f.id);
        setErrors([]);
      }
      update();
    });
    uppy.on('upload-progress', (file, progress) => {
      if (!clock.start && progress.bytesUploaded > 0) {
        clock.start = performance.now();
        clock.base = uppy.getFiles().reduce((s, f) => s + (f.progress.uploadComplete ? f.size || 0 : f.progress.bytesUploaded || 0), 0);
      }
      update();
    });
    uppy.on('upload-error', (file, err) => {
      const text = tusErrorText(err);
      if (file) uppy.setFileState(file.id, { error: text });
      setErrors((es) => es.concat(`${file ? file.name : ''}: ${text}`));
      update();
    });
    uppy.on('upload-success', () => {
      onDone();
      update();
    });
    uppy.on('file-removed', update);
    uppy.on('complete', () => {
      clock.end = performance.now();
      setUploadsPending(false);
      onDone();
      update();
    });
    const unfix = listRole(target.current);
    return () => {
      unfix();
      clearTimeout(unhold);
      cancelAnimationFrame(frame);
      uppy.destroy();
    };
  }, []);
  return html`<div class="upload card">
    ${errors.map((e, i) => html`<${Banner} key=${i} error=${e} />`)}
    <div ref=${target} class="uppy-target"></div>
    <p class="upload-summary" role="status" aria-live="polite">${summary}</p>
  </div>`;
}
