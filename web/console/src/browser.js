// Buckets and the file browser: listing (delimiter=/), upload (Uppy over
// tus), download, zip, move, copy, delete, preview and share.
import { memo } from 'preact/compat';
import { useState, useEffect, useRef, useMemo, useCallback } from 'preact/hooks';
import Uppy from '@uppy/core';
import Dashboard from '@uppy/dashboard';
import Tus from '@uppy/tus';
import GoldenRetriever from '@uppy/golden-retriever';
import { call, request, token, fileURL, saveBlob, formatBytes, formatDate, ApiError } from './api.js';
import { html, Link, go, Banner, useAsync, CopyField } from './ui.js';

const enc = encodeURIComponent;

export function browserPath(bucket, prefix) {
  return `/b/${enc(bucket)}/${prefix.split('/').map(enc).join('/')}`;
}

export function Buckets() {
  const list = useAsync(() => call('GET', 'buckets'), []);
  const [name, setName] = useState('');
  const [visibility, setVisibility] = useState('private');
  const [error, setError] = useState(null);
  const [msg, setMsg] = useState('');
  const act = async (fn, ok) => {
    setError(null);
    setMsg('');
    try {
      await fn();
      if (ok) setMsg(ok);
      list.reload();
    } catch (e) {
      setError(e);
    }
  };
  const create = (e) => {
    e.preventDefault();
    act(() => call('POST', 'buckets', { name, visibility }), `Bucket ${name} created.`).then(() => setName(''));
  };
  const buckets = (list.data && list.data.buckets) || [];
  return html`<section>
    <h1>Buckets</h1>
    <${Banner} error=${error || list.error} onClose=${() => setError(null)} />
    ${msg && html`<${Banner} kind="ok" error=${msg} />`}
    <form class="inline card" onSubmit=${create} aria-label="Create a bucket">
      <label>Name <input name="bucket" required minlength="3" maxlength="63" pattern="[a-z0-9.\\-]+" value=${name}
        onInput=${(e) => setName(e.target.value)} placeholder="my-files" /></label>
      <label>Visibility <select value=${visibility} onChange=${(e) => setVisibility(e.target.value)}>
        <option value="private">private</option><option value="public-read">public-read</option></select></label>
      <button type="submit" class="primary">Create bucket</button>
    </form>
    ${list.loading && !list.data ? html`<p class="muted">Loading…</p>` : null}
    <table class="list">
      <thead><tr><th>Name</th><th>Visibility</th><th class="hide-s">Created</th><th><span class="sr">Actions</span></th></tr></thead>
      <tbody>
        ${buckets.map((b) => html`<tr key=${b.name}>
          <td><${Link} href=${browserPath(b.name, '')}>${b.name}</${Link}></td>
          <td><select aria-label=${'Visibility of ' + b.name} value=${b.visibility}
            onChange=${(e) => act(() => call('PATCH', `buckets/${enc(b.name)}`, { visibility: e.target.value }), `${b.name} is now ${e.target.value}.`)}>
            <option value="private">private</option><option value="public-read">public-read</option></select></td>
          <td class="hide-s">${formatDate(b.created_at)}</td>
          <td class="actions"><button class="danger" aria-label=${'Delete bucket ' + b.name}
            onClick=${() => confirm(`Delete the bucket ${b.name}? It must be empty.`) && act(() => call('DELETE', `buckets/${enc(b.name)}`), `Bucket ${b.name} deleted.`)}>Delete</button></td>
        </tr>`)}
      </tbody>
    </table>
    ${list.data && buckets.length === 0 ? html`<p class="muted">No buckets yet.</p>` : null}
  </section>`;
}

// A download grant: a share link that lives 5 minutes and serves one
// download (a resumed download, a Range further in, still works until it
// expires). It shows in the share list with this note.
const GRANT = { expires_in: 300, max_downloads: 1, note: 'console download' };

/** saveURL starts the browser's native download of a same-origin URL. */
function saveURL(url, name) {
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
}

// PENDING marks (in localStorage, a flag and nothing else) that uploads
// started and have not all completed, so that the browser page opens the
// upload panel after a reload and Golden Retriever resumes them.
const PENDING = 'coffer.uploads-pending';

function uploadsPending() {
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

const ROW = 44; // px, the fixed row height of the virtualized list

function useListing(bucket, prefix, filter) {
  const [state, setState] = useState({ entries: [], done: false, error: null });
  const [n, setN] = useState(0);
  useEffect(() => {
    let live = true;
    setState({ entries: [], done: false, error: null });
    (async () => {
      let cursor = '';
      let all = [];
      for (;;) {
        const q = new URLSearchParams({ prefix: prefix + filter, delimiter: '/', limit: '1000' });
        if (cursor) q.set('cursor', cursor);
        let page;
        try {
          page = await call('GET', `buckets/${enc(bucket)}/files?${q}`);
        } catch (error) {
          if (live) setState({ entries: all, done: true, error });
          return;
        }
        if (!live) return;
        const folders = (page.folders || []).map((f) => ({ folder: true, key: f, name: f.slice(prefix.length), size: -1, date: '' }));
        const files = (page.files || []).map((f) => ({ ...f, name: f.key.slice(prefix.length), date: f.last_modified }));
        all = all.concat(folders, files);
        cursor = page.next_cursor || '';
        setState({ entries: all, done: !cursor, error: null });
        if (!cursor) return;
      }
    })();
    return () => {
      live = false;
    };
  }, [bucket, prefix, filter, n]);
  return { ...state, reload: () => setN((x) => x + 1) };
}

function sortEntries(entries, sort) {
  const dir = sort.desc ? -1 : 1;
  const cmp = {
    name: (a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0),
    size: (a, b) => a.size - b.size,
    date: (a, b) => (a.date < b.date ? -1 : a.date > b.date ? 1 : 0),
  }[sort.by];
  return entries.slice().sort((a, b) => {
    if (a.folder !== b.folder) return a.folder ? -1 : 1;
    return dir * cmp(a, b);
  });
}

export function Browser({ bucket, prefix }) {
  const [filter, setFilter] = useState('');
  const listing = useListing(bucket, prefix, filter);
  const [sort, setSort] = useState({ by: 'name', desc: false });
  const [selected, setSelected] = useState(new Set());
  const [error, setError] = useState(null);
  const [msg, setMsg] = useState('');
  // Open the upload panel by itself when uploads of an earlier page are
  // waiting to resume (Golden Retriever restores them when it mounts).
  const [showUpload, setShowUpload] = useState(uploadsPending);
  const [preview, setPreview] = useState(null);
  const [share, setShare] = useState(null);
  const [height, setHeight] = useState(480);
  const box = useRef(null);
  useEffect(() => {
    setSelected(new Set());
    setFilter('');
    if (box.current) box.current.scrollTop = 0;
  }, [bucket, prefix]);
  useEffect(() => {
    const fit = () => setHeight(Math.max(240, window.innerHeight - (box.current ? box.current.getBoundingClientRect().top : 200) - 16));
    fit();
    window.addEventListener('resize', fit);
    return () => window.removeEventListener('resize', fit);
  }, [showUpload]);
  const entries = useMemo(() => sortEntries(listing.entries, sort), [listing.entries, sort]);
  const act = async (fn, ok) => {
    setError(null);
    setMsg('');
    try {
      await fn();
      if (ok) setMsg(ok);
      listing.reload();
      setSelected(new Set());
    } catch (e) {
      setError(e);
    }
  };
  const chosen = entries.filter((e) => selected.has(e.key));
  const toggle = useCallback((key) => {
    setSelected((sel) => {
      const s = new Set(sel);
      if (s.has(key)) s.delete(key);
      else s.add(key);
      return s;
    });
  }, []);
  const base = `buckets/${enc(bucket)}`;

  // Downloads go through the browser's own download manager, streamed to
  // disk: a short-lived, single-use share link of the file (or of the
  // folder, as a zip) is opened as a same-origin download link. Only a
  // selection of several items (no share covers it) is fetched as a zip
  // into memory (POST /zip). docs/console.md, "Downloads".
  const download = async (e) => {
    const s = await call('POST', 'shares', { bucket, key: e.key, ...GRANT });
    // ?download=1: the server answers Content-Disposition: attachment, so
    // the file is saved, never opened as a document, whatever its type.
    saveURL(s.url + '?download=1', e.key.split('/').pop());
  };
  const zip = async (items, name) => {
    if (items.length === 1 && items[0].folder) {
      const s = await call('POST', 'shares', { bucket, prefix: items[0].key, ...GRANT });
      return saveURL(s.url + '?zip=1', name);
    }
    const keys = items.filter((e) => !e.folder).map((e) => e.key);
    const prefixes = items.filter((e) => e.folder).map((e) => e.key);
    const res = await request('POST', `/api/v1/${base}/zip`, { keys, prefixes, name });
    saveBlob(await res.blob(), name);
  };
  const downloadSelection = () =>
    act(async () => {
      if (chosen.length === 1 && !chosen[0].folder) return download(chosen[0]);
      const name = chosen.length === 1 ? chosen[0].name.replace(/\/$/, '') + '.zip' : `${bucket}.zip`;
      return zip(chosen, name);
    });
  const rename = (e) => {
    const to = prompt(`Move or rename ${e.key} to (full key in ${bucket}):`, e.key);
    if (to && to !== e.key) act(() => call('POST', `${base}/move`, { from: e.key, to }), `Moved to ${to}.`);
  };
  const copy = (e) => {
    const to = prompt(`Copy ${e.key} to (full key in ${bucket}):`, e.key.replace(/(\.[^./]*)?$/, ' copy$1'));
    if (to) act(() => call('POST', `${base}/copy`, { from: e.key, to }), `Copied to ${to}.`);
  };
  const remove = () => {
    const names = chosen.map((e) => e.name).join(', ');
    if (!confirm(`Delete ${chosen.length} item(s): ${names}? Folders are deleted with everything in them.`)) return;
    act(async () => {
      const keys = chosen.filter((e) => !e.folder).map((e) => e.key);
      const bodies = chosen.filter((e) => e.folder).map((e) => ({ prefix: e.key }));
      if (keys.length) bodies.unshift({ keys });
      for (const body of bodies) {
        const res = await request('POST', `/api/v1/${base}/delete`, body);
        const lines = (await res.text()).split('\n').filter(Boolean).map((l) => JSON.parse(l));
        // One line per key, then the totals ({done: true}); a missing
        // totals line means the request was cut short.
        const bad = lines.filter((l) => !l.done && l.status === 'error');
        if (bad.length) throw new Error(`${bad.length} item(s) could not be deleted: ${bad[0].key} (${bad[0].error})`);
        if (!lines.some((l) => l.done)) throw new Error('The delete was cut short; reload to see what is left.');
      }
    }, 'Deleted.');
  };
  const newFolder = () => {
    const name = prompt('New folder name:');
    if (name) go(browserPath(bucket, prefix + name.replace(/\/+$/, '') + '/'));
  };
  const crumbs = prefix.split('/').filter(Boolean);
  const allSelected = entries.length > 0 && selected.size === entries.length;
  const sortButton = (by, label) => html`<button class="plain sort" aria-label=${'Sort by ' + label}
    aria-pressed=${sort.by === by} onClick=${() => setSort({ by, desc: sort.by === by ? !sort.desc : false })}>${label}${sort.by === by ? (sort.desc ? ' ▾' : ' ▴') : ''}</button>`;

  return html`<section class="browser">
    <nav class="crumbs" aria-label="Breadcrumbs">
      <${Link} href="/buckets">Buckets</${Link}> /
      <${Link} href=${browserPath(bucket, '')}>${bucket}</${Link}>
      ${crumbs.map((c, i) => html` / <${Link} href=${browserPath(bucket, crumbs.slice(0, i + 1).join('/') + '/')}>${c}</${Link}>`)}
    </nav>
    <${Banner} error=${error || listing.error} onClose=${() => setError(null)} />
    ${msg && html`<${Banner} kind="ok" error=${msg} onClose=${() => setMsg('')} />`}
    <div class="toolbar" role="toolbar" aria-label="File actions">
      <button class="primary" aria-expanded=${showUpload} onClick=${() => setShowUpload(!showUpload)}>Upload</button>
      <button onClick=${newFolder}>New folder</button>
      <button disabled=${!chosen.length} onClick=${downloadSelection}>Download</button>
      <button disabled=${chosen.length !== 1} onClick=${() => setShare(chosen[0])}>Share</button>
      <button onClick=${() => setShare({ folder: true, key: prefix, name: prefix || bucket })}>Share this folder</button>
      <button disabled=${chosen.length !== 1 || chosen[0].folder} onClick=${() => rename(chosen[0])}>Rename/move</button>
      <button disabled=${chosen.length !== 1 || chosen[0].folder} onClick=${() => copy(chosen[0])}>Copy</button>
      <button class="danger" disabled=${!chosen.length} onClick=${remove}>Delete</button>
      <label class="filter">Filter <input type="search" placeholder="name starts with…" value=${filter}
        onInput=${(e) => setFilter(e.target.value)} /></label>
    </div>
    ${showUpload && html`<${Upload} bucket=${bucket} prefix=${prefix} onDone=${() => listing.reload()} />`}
    <div class="status muted" aria-live="polite">
      ${entries.length} item(s)${listing.done ? '' : ', loading…'}${selected.size ? `, ${selected.size} selected` : ''}
    </div>
    <div class="grid-head" role="row">
      <span><input type="checkbox" aria-label="Select all" checked=${allSelected}
        onChange=${() => setSelected(allSelected ? new Set() : new Set(entries.map((e) => e.key)))} /></span>
      <span>${sortButton('name', 'Name')}</span><span class="num">${sortButton('size', 'Size')}</span><span class="hide-s">${sortButton('date', 'Modified')}</span>
    </div>
    <${Rows} entries=${entries} selected=${selected} toggle=${toggle} height=${height} box=${box}
      bucket=${bucket} prefix=${prefix} done=${listing.done} onOpen=${setPreview} />
    ${preview && html`<${Preview} bucket=${bucket} entry=${preview} onClose=${() => setPreview(null)}
      onDownload=${() => act(() => download(preview))} />`}
    ${share && html`<${ShareDialog} bucket=${bucket} entry=${share} onClose=${() => setShare(null)} />`}
  </section>`;
}

/**
 * Rows is the virtualized list: only the rows in view (and a margin) are
 * in the DOM, so a folder of 10,000 entries scrolls like one of 30. Its
 * scroll position is its own state: scrolling re-renders only the rows.
 */
const Rows = memo(function Rows({ entries, selected, toggle, height, box, bucket, prefix, done, onOpen }) {
  const [scroll, setScroll] = useState(0);
  const frame = useRef(0);
  useEffect(() => setScroll(0), [bucket, prefix]);
  const onScroll = (e) => {
    const top = e.target.scrollTop;
    cancelAnimationFrame(frame.current);
    frame.current = requestAnimationFrame(() => setScroll(top));
  };
  const first = Math.max(0, Math.floor(scroll / ROW) - 10);
  const last = Math.min(entries.length, first + Math.ceil(height / ROW) + 20);
  return html`<div class="rows" ref=${box} style=${{ height: height + 'px' }} onScroll=${onScroll}
      role="list" aria-label=${'Files in ' + (prefix || bucket)}>
      <div style=${{ height: entries.length * ROW + 'px', position: 'relative' }}>
        ${entries.slice(first, last).map((e, i) => html`<${Row} key=${e.key} e=${e} top=${(first + i) * ROW} checked=${selected.has(e.key)}
          toggle=${toggle} bucket=${bucket} onOpen=${onOpen} />`)}
      </div>
      ${done && entries.length === 0 ? html`<p class="muted empty">This folder is empty. Upload files to create it.</p>` : null}
    </div>`;
});

const Row = memo(function Row({ e, top, checked, toggle, bucket, onOpen }) {
  return html`<div class="row" role="listitem" style=${{ top: top + 'px' }} data-key=${e.key}>
    <span><input type="checkbox" aria-label=${'Select ' + e.name} checked=${checked} onChange=${() => toggle(e.key)} /></span>
    <span class="name">${e.folder
      ? html`<${Link} class="folder" href=${browserPath(bucket, e.key)}>${e.name}</${Link}>`
      : html`<button class="plain file" onClick=${() => onOpen(e)}>${e.name}</button>`}</span>
    <span class="num">${e.folder ? '' : formatBytes(e.size)}</span>
    <span class="hide-s muted">${formatDate(e.date)}</span>
  </div>`;
});

/** problemText turns a tus error's response into title/detail text. */
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

function Upload({ bucket, prefix, onDone }) {
  const target = useRef(null);
  const where = useRef({ bucket, prefix });
  where.current = { bucket, prefix };
  const [errors, setErrors] = useState([]);
  useEffect(() => {
    const uppy = new Uppy({ autoProceed: true, id: 'console-upload' });
    uppy.use(Dashboard, {
      inline: true,
      target: target.current,
      height: 300,
      width: '100%',
      showProgressDetails: true,
      proudlyDisplayPoweredByUppy: false,
      fileManagerSelectionType: 'both',
      theme: 'auto',
      note: 'Files and folders; uploads resume after a network drop or a page reload.',
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
    });
    uppy.on('upload', () => setUploadsPending(true));
    uppy.use(Tus, {
      endpoint: '/api/v1/tus/',
      retryDelays: [0, 1000, 3000, 5000, 10000],
      removeFingerprintOnSuccess: true,
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
    uppy.on('upload-error', (file, err) => {
      const text = tusErrorText(err);
      if (file) uppy.setFileState(file.id, { error: text });
      setErrors((es) => es.concat(`${file ? file.name : ''}: ${text}`));
    });
    uppy.on('upload-success', () => onDone());
    uppy.on('complete', () => {
      setUploadsPending(false);
      onDone();
    });
    return () => uppy.destroy();
  }, []);
  return html`<div class="upload card">
    ${errors.map((e, i) => html`<${Banner} key=${i} error=${e} />`)}
    <div ref=${target} class="uppy-target" aria-label="Upload files"></div>
  </div>`;
}

const TEXT_LIMIT = 1 << 20;
// Images bigger than this are not fetched into the page for a preview.
const IMAGE_LIMIT = 64 << 20;

function kindOf(entry) {
  const ct = (entry.content_type || '').split(';')[0].trim().toLowerCase();
  if (ct === 'image/svg+xml' || /\.svgz?$/i.test(entry.key)) return 'svg';
  if (ct.startsWith('image/')) return 'image';
  if (ct.startsWith('video/')) return 'video';
  if (ct.startsWith('audio/')) return 'audio';
  if (ct === 'application/pdf') return 'pdf';
  if (ct === 'text/markdown' || ct === 'text/x-markdown' || /\.(md|markdown)$/i.test(entry.key)) return 'markdown';
  if (ct.startsWith('text/') || /json|xml|javascript|yaml|toml|markdown/.test(ct) || /\.(md|txt|log|csv|ya?ml|toml|ini|conf|go|py|js|ts|rs|sh)$/i.test(entry.key))
    return 'text';
  return 'none';
}

/**
 * sniffRaster names the image format of bytes (a Uint8Array) by its magic
 * numbers, for the raster formats a browser shows and that cannot hold
 * script: PNG, JPEG, GIF, WebP, AVIF. Anything else (SVG, HTML, XML, a
 * file whose stored type lies) is null. The stored Content-Type is the
 * uploader's word and is never used to type a blob.
 */
export function sniffRaster(b) {
  const bytes = (i, ...xs) => b.length >= i + xs.length && xs.every((x, j) => b[i + j] === x);
  const ascii = (i, s) => bytes(i, ...[...s].map((c) => c.charCodeAt(0)));
  if (bytes(0, 0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return 'image/png';
  if (bytes(0, 0xff, 0xd8, 0xff)) return 'image/jpeg';
  if (ascii(0, 'GIF87a') || ascii(0, 'GIF89a')) return 'image/gif';
  if (ascii(0, 'RIFF') && ascii(8, 'WEBP')) return 'image/webp';
  if (ascii(4, 'ftyp')) {
    // ISO BMFF: the major brand, then the compatible brands of the box.
    const size = Math.min(b.length, ((b[0] << 24) | (b[1] << 16) | (b[2] << 8) | b[3]) >>> 0);
    for (let i = 8; i + 4 <= size; i += i === 8 ? 8 : 4) if (ascii(i, 'avif') || ascii(i, 'avis')) return 'image/avif';
  }
  return null;
}

/**
 * grantURL is a same-origin /s/ URL of the file that elements without the
 * bearer token (img, video, iframe) can load: a short-lived share link of
 * the file, deleted when the preview closes. The server answers /s/ with
 * the stored type, nosniff, and for active types (SVG, HTML, XML) a
 * sandboxing CSP: opened on its own, such a document runs no script.
 */
async function grantURL(bucket, key, note) {
  const s = await call('POST', 'shares', { bucket, key, expires_in: 3600, note });
  return { url: s.url, id: s.id };
}

function Preview({ bucket, entry, onClose, onDownload }) {
  const dlg = useRef(null);
  const [state, setState] = useState({ loading: true });
  const kind = kindOf(entry);
  useEffect(() => {
    dlg.current.showModal();
    let url = null;
    let shareId = null;
    let live = true;
    (async () => {
      try {
        if (kind === 'image') {
          // Raster images only, typed by their bytes: a blob: URL is a
          // document of the console's origin when opened on its own, so
          // nothing that can hold script (SVG, HTML) may ever become one.
          // The URL is revoked as soon as the image has loaded.
          if (entry.size > IMAGE_LIMIT) return live && setState({ tooBig: true });
          const res = await request('GET', fileURL(bucket, entry.key));
          const bytes = new Uint8Array(await res.arrayBuffer());
          const type = sniffRaster(bytes);
          if (!type) return live && setState({ notRaster: true });
          url = URL.createObjectURL(new Blob([bytes], { type }));
          if (live) setState({ url });
        } else if (kind === 'svg' || kind === 'pdf' || kind === 'video' || kind === 'audio') {
          // Loaded by the element from /s/ (Range for media, the server's
          // sandbox for SVG), never from a blob: of the console's origin.
          const g = await grantURL(bucket, entry.key, 'console preview');
          shareId = g.id;
          if (live) setState({ url: g.url });
        } else if (kind === 'text' || kind === 'markdown') {
          const res = await request('GET', fileURL(bucket, entry.key), undefined, { headers: { Range: `bytes=0-${TEXT_LIMIT - 1}` } });
          const text = await res.text();
          if (live) setState({ text, cut: entry.size > TEXT_LIMIT });
        } else if (live) setState({});
      } catch (error) {
        if (live) setState({ error });
      }
    })();
    return () => {
      live = false;
      if (url) URL.revokeObjectURL(url);
      if (shareId) call('DELETE', `shares/${shareId}`).catch(() => {});
    };
  }, [entry.key]);
  const revoke = (e) => {
    // The image is decoded: its blob: URL is no longer needed, and a
    // revoked one cannot be opened elsewhere.
    if (e.target.src.startsWith('blob:')) URL.revokeObjectURL(e.target.src);
  };
  let body;
  if (state.error) body = html`<${Banner} error=${state.error} />`;
  else if (state.loading) body = html`<p class="muted">Loading…</p>`;
  else if (state.tooBig) body = html`<p class="muted">This image is too big to preview (over ${formatBytes(IMAGE_LIMIT)}).</p>`;
  else if (state.notRaster)
    body = html`<p class="muted">Not shown: this file's bytes are not a PNG, JPEG, GIF, WebP or AVIF image (its stored type says ${entry.content_type}).</p>`;
  else if (kind === 'image') body = html`<img class="preview-media" src=${state.url} alt=${'Preview of ' + entry.name} onLoad=${revoke} onError=${revoke} />`;
  else if (kind === 'svg') body = html`<img class="preview-media" src=${state.url} alt=${'Preview of ' + entry.name} />`;
  else if (kind === 'video') body = html`<video class="preview-media" controls src=${state.url}></video>`;
  else if (kind === 'audio') body = html`<audio controls src=${state.url}></audio>`;
  else if (kind === 'pdf') body = html`<iframe class="preview-pdf" title=${'PDF ' + entry.name} src=${state.url}></iframe>`;
  else if (kind === 'markdown')
    body = html`<${Markdown} text=${state.text} />${state.cut ? html`<p class="muted">First 1 MiB shown.</p>` : null}`;
  else if (kind === 'text')
    body = html`<pre class="preview-text" data-testid="preview-text">${state.text}</pre>${state.cut ? html`<p class="muted">First 1 MiB shown.</p>` : null}`;
  else body = html`<p class="muted">No preview for this type (${entry.content_type || 'unknown'}).</p>`;
  return html`<dialog ref=${dlg} class="preview" aria-label=${'Preview of ' + entry.name} onClose=${onClose}>
    <header><h2>${entry.name}</h2><span class="muted">${formatBytes(entry.size)} · ${entry.content_type}</span>
      <button onClick=${onDownload}>Download</button>
      <button class="plain" aria-label="Close preview" onClick=${() => dlg.current.close()}>×</button></header>
    <div class="preview-body">${body}</div>
  </dialog>`;
}

/**
 * Markdown renders text through markdown.js (loaded on first use): marked,
 * sanitized by DOMPurify into a DOM fragment inserted as nodes. The HTML
 * of user data is never assigned to innerHTML; the console's CSP blocks
 * what is left anyway (no inline script, images only from this origin).
 */
function Markdown({ text }) {
  const box = useRef(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    let live = true;
    import('./markdown.js')
      .then(({ renderMarkdown }) => live && box.current.replaceChildren(renderMarkdown(text)))
      .catch((e) => live && setError(e));
    return () => {
      live = false;
    };
  }, [text]);
  return html`<${Banner} error=${error} /><div class="preview-markdown" data-testid="preview-markdown" ref=${box}></div>`;
}

export function shareLink(token) {
  return `${location.origin}/share#${token}`;
}

function ShareDialog({ bucket, entry, onClose }) {
  const dlg = useRef(null);
  const [expires, setExpires] = useState(7 * 86400);
  const [password, setPassword] = useState('');
  const [maxDownloads, setMax] = useState('');
  const [upload, setUpload] = useState(false);
  const [note, setNote] = useState('');
  const [made, setMade] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => dlg.current.showModal(), []);
  const submit = async (e) => {
    e.preventDefault();
    setError(null);
    const body = { bucket, expires_in: Number(expires) };
    if (entry.folder) body.prefix = entry.key;
    else body.key = entry.key;
    if (password) body.password = password;
    if (maxDownloads) body.max_downloads = Number(maxDownloads);
    if (upload) body.allow_upload = true;
    if (note) body.note = note;
    try {
      setMade(await call('POST', 'shares', body));
    } catch (err) {
      setError(err);
    }
  };
  return html`<dialog ref=${dlg} class="share" aria-label="Share link" onClose=${onClose}>
    <header><h2>Share ${entry.folder ? 'folder' : 'file'} ${entry.name}</h2>
      <button class="plain" aria-label="Close" onClick=${() => dlg.current.close()}>×</button></header>
    <${Banner} error=${error} />
    ${made
      ? html`<div>
          <${CopyField} id="share-url" label="Link (shown once)" value=${shareLink(made.token)} />
          <${CopyField} id="share-raw" label="Direct link (file or JSON listing)" value=${location.origin + made.url} />
          <p class="muted">Expires ${formatDate(made.expires_at)}. Manage links under Shares.</p></div>`
      : html`<form class="stack" onSubmit=${submit}>
          <label>Expires in <select value=${expires} onChange=${(e) => setExpires(e.target.value)}>
            <option value="3600">1 hour</option><option value="86400">1 day</option>
            <option value="604800">7 days</option><option value="2592000">30 days</option></select></label>
          <label>Password (optional) <input type="password" autocomplete="new-password" value=${password} onInput=${(e) => setPassword(e.target.value)} /></label>
          <label>Download limit (optional) <input type="number" min="1" value=${maxDownloads} onInput=${(e) => setMax(e.target.value)} /></label>
          ${entry.folder && html`<label class="check"><input type="checkbox" checked=${upload} onChange=${(e) => setUpload(e.target.checked)} /> Drop box: visitors may upload</label>`}
          <label>Note (optional) <input value=${note} onInput=${(e) => setNote(e.target.value)} /></label>
          <button class="primary" type="submit">Create link</button>
        </form>`}
  </dialog>`;
}

export { ApiError };
