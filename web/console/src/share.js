// The anonymous share page, /share#TOKEN: a file's page (preview where
// safe, note, expiry, download), a folder's page (its folders as folders,
// previews, a zip of everything), a drop box (Uppy). It talks only to
// /s/{token} (no account); the token stays in the fragment, which the
// browser never sends. Previews load from /s/ itself: the server sends
// the stored type with nosniff, and active types (SVG, HTML, XML) with a
// sandboxing CSP, so nothing shared runs in this origin.
import { useState, useEffect, useRef } from 'preact/hooks';
import Uppy from '@uppy/core';
import Dashboard from '@uppy/dashboard';
import XHRUpload from '@uppy/xhr-upload';
import { problemOf, formatBytes, formatDate } from './api.js';
import { html, Banner, Modal } from './ui.js';
import { listRole } from './upload.js';

const enc = encodeURIComponent;
const path = (p) => p.split('/').map(enc).join('/');

/** trouble says in words why a link does not work (its problem's reason and state). */
function trouble(err) {
  if (!err || typeof err === 'string') return err;
  const state = err.extra && err.extra.reason === 'share_unavailable' ? err.extra.state : '';
  switch (state) {
    case 'used_up':
      return 'This link has been used the maximum number of times.';
    case 'expired':
      return 'This link has expired.';
    case 'revoked':
      return 'This link has been revoked by the person who shared it.';
    case 'gone':
      return 'What this link shared is no longer there.';
    case 'unavailable':
      return 'This link is not available at the moment.';
  }
  if (err.status === 404) return 'This link does not exist, or is no longer available. Check that you have all of it.';
  if (err.status === 429) return `Too many requests through this link. Try again${err.retryAfter ? ` in ${err.retryAfter} s` : ' later'}.`;
  return err.message;
}

/** previewKind is how a shared file may be shown in the page, or null. */
function previewKind(type) {
  const ct = (type || '').split(';')[0].trim().toLowerCase();
  if (ct.startsWith('image/')) return 'image'; // an <img> runs no script, SVG included
  if (ct.startsWith('video/')) return 'video';
  if (ct.startsWith('audio/')) return 'audio';
  if (ct === 'application/pdf') return 'pdf';
  return null;
}

function Media({ kind, src, name }) {
  if (kind === 'image') return html`<img class="preview-media" src=${src} alt=${'Preview of ' + name} />`;
  if (kind === 'video') return html`<video class="preview-media" controls preload="metadata" src=${src}></video>`;
  if (kind === 'audio') return html`<audio controls preload="metadata" src=${src}></audio>`;
  if (kind === 'pdf') return html`<iframe class="preview-pdf" title=${'PDF ' + name} src=${src}></iframe>`;
  return null;
}

function Terms({ info }) {
  return html`${info.note ? html`<blockquote class="note" data-testid="share-note">${info.note}</blockquote>` : null}
    <p class="muted terms">Available until <time datetime=${info.expires_at}>${formatDate(info.expires_at)}</time>${info.downloads_left !== undefined
      ? `, ${info.downloads_left} ${info.downloads_left === 1 ? 'download' : 'downloads'} left`
      : ''}.</p>`;
}

export function SharePage() {
  const token = location.hash.slice(1);
  const base = `/s/${enc(token)}`;
  const [state, setState] = useState({ loading: true });
  const [n, setN] = useState(0);
  const [password, setPassword] = useState('');
  const [error, setError] = useState(null);
  useEffect(() => {
    let live = true;
    const set = (s) => live && setState(s);
    (async () => {
      if (!token) return set({ error: 'This link is incomplete: it ends after “#”.' });
      const res = await fetch(`${base}?info=1`, { credentials: 'same-origin' });
      if (res.status === 401) return set({ locked: true });
      if (!res.ok) return set({ error: await problemOf(res) });
      const info = await res.json();
      if (info.kind !== 'folder') return set({ info });
      let files = [];
      let cursor = '';
      for (;;) {
        const q = new URLSearchParams({ limit: '1000' });
        if (cursor) q.set('cursor', cursor);
        const page = await fetch(`${base}?${q}`, { credentials: 'same-origin' });
        if (!page.ok) return set({ error: await problemOf(page) });
        const body = await page.json();
        files = files.concat(body.files || []);
        cursor = body.next_cursor || '';
        if (!cursor || files.length >= 10000) break;
      }
      set({ info, files, cut: !!cursor });
    })().catch((e) => set({ error: e }));
    return () => {
      live = false;
    };
  }, [n]);
  const unlock = async (e) => {
    e.preventDefault();
    setError(null);
    const res = await fetch(`${base}/unlock`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ password }), credentials: 'same-origin',
    });
    if (!res.ok) return setError(await problemOf(res));
    setN((x) => x + 1);
  };
  let title = 'Shared with you';
  let body;
  if (state.error) body = html`<${Banner} error=${trouble(state.error)} />`;
  else if (state.locked)
    body = html`<form class="stack card" onSubmit=${unlock}><${Banner} error=${error} />
      <label>This link needs a password <input type="password" required value=${password} onInput=${(e) => setPassword(e.target.value)} /></label>
      <button class="primary" type="submit">Unlock</button></form>`;
  else if (state.info && state.info.kind === 'file') {
    const { info } = state;
    title = info.name;
    const kind = previewKind(info.content_type);
    body = html`<div class="card">
      <p class="muted">${formatBytes(info.size)} · ${info.content_type}</p>
      <${Terms} info=${info} />
      ${kind && info.downloads_left === undefined
        ? html`<div class="share-preview"><${Media} kind=${kind} src=${base} name=${info.name} /></div>`
        : kind
          ? html`<p class="muted">No preview: this link allows a limited number of downloads, and a preview would use one.</p>`
          : null}
      <a class="button primary" href=${`${base}?download=1`} download=${info.name}>Download</a></div>`;
  } else if (state.info) {
    title = state.info.name ? `Folder ${state.info.name}` : 'Shared folder';
    body = html`<${Folder} base=${base} info=${state.info} files=${state.files} cut=${state.cut} onChange=${() => setN((x) => x + 1)} />`;
  } else body = html`<p class="muted">Loading…</p>`;
  return html`<main id="main" class="share-page"><h1>${title}</h1>${body}</main>`;
}

/** Folder shows the shared folder one level at a time (sub: the level's path, "" or ending in "/"). */
function Folder({ base, info, files, cut, onChange }) {
  const [sub, setSub] = useState('');
  const [preview, setPreview] = useState(null);
  const folders = new Set();
  const here = [];
  for (const f of files) {
    if (!f.name.startsWith(sub)) continue;
    const rest = f.name.slice(sub.length);
    const slash = rest.indexOf('/');
    if (slash >= 0) folders.add(rest.slice(0, slash + 1));
    else if (rest) here.push({ ...f, base: rest });
  }
  const crumbs = sub.split('/').filter(Boolean);
  const limited = info.downloads_left !== undefined;
  return html`<div>
    <${Terms} info=${info} />
    ${files.length ? html`<p><a class="button" href=${`${base}?zip=1`} download>Download all (zip)</a></p>` : null}
    <nav class="crumbs" aria-label="Folders">
      <button class="plain link" onClick=${() => setSub('')} aria-current=${sub === '' ? 'page' : undefined}>${info.name || 'Shared folder'}</button>
      ${crumbs.map((c, i) => html` / <button class="plain link" onClick=${() => setSub(crumbs.slice(0, i + 1).join('/') + '/')}
        aria-current=${i === crumbs.length - 1 ? 'page' : undefined}>${c}</button>`)}
    </nav>
    <table class="list share-list"><thead><tr><th>Name</th><th class="num">Size</th><th class="hide-s">Modified</th></tr></thead>
    <tbody>
      ${[...folders].sort().map((d) => html`<tr key=${'d' + d}>
        <td class="wrap"><button class="plain link folder" onClick=${() => setSub(sub + d)}>${d}</button></td><td></td><td class="hide-s"></td></tr>`)}
      ${here.map((f) => html`<tr key=${f.name}>
        <td class="wrap"><a href=${`${base}/${path(f.name)}?download=1`} download=${f.base}>${f.base}</a>
          ${previewKind(f.content_type) && !limited
            ? html` <button class="plain link" aria-label=${'Preview ' + f.base} onClick=${() => setPreview(f)}>preview</button>`
            : null}</td>
        <td class="num">${formatBytes(f.size)}</td><td class="hide-s">${formatDate(f.last_modified)}</td></tr>`)}
    </tbody></table>
    ${!files.length ? html`<p class="muted">Nothing here yet.</p>` : null}
    ${cut ? html`<p class="muted">The first 10,000 files are listed.</p>` : null}
    ${preview && html`<${Modal} label=${'Preview of ' + preview.base} title=${preview.base} className="preview" closeLabel="Close preview"
        onClose=${() => setPreview(null)}>
      <div class="preview-body"><${Media} kind=${previewKind(preview.content_type)} src=${`${base}/${path(preview.name)}`} name=${preview.base} /></div>
    </${Modal}>`}
    ${info.allow_upload ? html`<${DropBox} base=${base} sub=${sub} onDone=${onChange} />` : null}
  </div>`;
}

/**
 * DropBox takes uploads into the shared folder (PUT /s/{token}/{path},
 * one request a file, never replacing a file: 412 if the name is taken),
 * through Uppy's dashboard: drag and drop of files and folders, progress.
 */
function DropBox({ base, sub, onDone }) {
  const target = useRef(null);
  const [errors, setErrors] = useState([]);
  useEffect(() => {
    const uppy = new Uppy({ autoProceed: true, id: 'share-dropbox' });
    uppy.use(Dashboard, {
      inline: true,
      target: target.current,
      height: 280,
      width: '100%',
      proudlyDisplayPoweredByUppy: false,
      fileManagerSelectionType: 'both',
      theme: 'auto',
      note: 'Files you drop here go to the owner of this folder.',
      hideProgressDetails: false,
    });
    uppy.use(XHRUpload, {
      endpoint: (file) => `${base}/${path(sub + ((file.meta && file.meta.relativePath) || file.name).replace(/^\/+/, ''))}`,
      method: 'PUT',
      formData: false,
      limit: 2,
      shouldRetry: () => false,
    });
    // A refusal shows the server's problem, in words: a taken name (412),
    // the owner's storage full (507), the link gone.
    uppy.on('upload-error', (file, err, xhr) => {
      let text = err.message;
      if (xhr && xhr.status === 412) text = 'A file of this name is there already.';
      else if (xhr && xhr.responseText) {
        try {
          const p = JSON.parse(xhr.responseText);
          text = trouble(Object.assign(new Error(p.detail ? `${p.title}: ${p.detail}` : p.title), { status: xhr.status, extra: p.extra }));
        } catch {
          /* the status line */
        }
      }
      if (file) uppy.setFileState(file.id, { error: text });
      setErrors((es) => es.concat(`${file ? file.name : ''}: ${text}`));
    });
    uppy.on('complete', () => onDone());
    const unfix = listRole(target.current);
    return () => {
      unfix();
      uppy.destroy();
    };
  }, [sub]);
  return html`<section class="dropzone card" aria-labelledby="dropbox-title">
    <h2 id="dropbox-title">Drop files here</h2>
    ${errors.map((e, i) => html`<${Banner} key=${i} error=${e} />`)}
    <div ref=${target} class="uppy-target"></div>
  </section>`;
}
