// The anonymous share page, /share#TOKEN: a file's download page, a
// folder's listing, a drop box. It talks only to /s/{token} (no account);
// the token stays in the fragment, which the browser never sends.
import { useState, useEffect } from 'preact/hooks';
import { problemOf, formatBytes, formatDate } from './api.js';
import { html, Banner } from './ui.js';

const enc = encodeURIComponent;

function fileName(disposition) {
  const star = /filename\*=UTF-8''([^;]+)/i.exec(disposition || '');
  if (star) return decodeURIComponent(star[1]);
  const plain = /filename=(?:"((?:[^"\\]|\\.)*)"|([^;]+))/i.exec(disposition || '');
  if (!plain) return 'file';
  return plain[1] !== undefined ? plain[1].replace(/\\(.)/g, '$1') : plain[2].trim();
}

export function SharePage() {
  const token = location.hash.slice(1);
  const base = `/s/${enc(token)}`;
  const [state, setState] = useState({ loading: true });
  const [n, setN] = useState(0);
  const [password, setPassword] = useState('');
  const [error, setError] = useState(null);
  useEffect(() => {
    (async () => {
      if (!token) return setState({ error: 'This link is incomplete.' });
      const head = await fetch(base, { method: 'HEAD', credentials: 'same-origin' });
      if (head.status === 401) return setState({ locked: true });
      if (!head.ok) {
        const res = await fetch(base, { credentials: 'same-origin' });
        return setState({ error: await problemOf(res) });
      }
      const disposition = head.headers.get('Content-Disposition');
      if (disposition) {
        return setState({ file: { name: fileName(disposition), size: Number(head.headers.get('Content-Length')), type: head.headers.get('Content-Type') } });
      }
      let files = [];
      let cursor = '';
      let info = {};
      for (;;) {
        const q = new URLSearchParams({ limit: '1000' });
        if (cursor) q.set('cursor', cursor);
        const res = await fetch(`${base}?${q}`, { credentials: 'same-origin' });
        if (!res.ok) return setState({ error: await problemOf(res) });
        info = await res.json();
        files = files.concat(info.files || []);
        cursor = info.next_cursor || '';
        if (!cursor || files.length >= 10000) break;
      }
      setState({ folder: { files, note: info.note, allowUpload: info.allow_upload } });
    })().catch((e) => setState({ error: e }));
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
  let body;
  if (state.error) body = html`<${Banner} error=${state.error.status === 404 ? 'This link does not exist or is no longer available.' : state.error} />
    ${state.error.status === 404 && state.error.detail ? html`<p class="muted">${state.error.title}: ${state.error.detail}</p>` : null}`;
  else if (state.locked)
    body = html`<form class="stack card" onSubmit=${unlock}><${Banner} error=${error} />
      <label>This link needs a password <input type="password" required value=${password} onInput=${(e) => setPassword(e.target.value)} /></label>
      <button class="primary" type="submit">Unlock</button></form>`;
  else if (state.file)
    body = html`<div class="card"><h2>${state.file.name}</h2><p class="muted">${formatBytes(state.file.size)} · ${state.file.type}</p>
      <a class="button primary" href=${`${base}?download=1`} download=${state.file.name}>Download</a></div>`;
  else if (state.folder)
    body = html`<div>${state.folder.note ? html`<p class="note">${state.folder.note}</p>` : null}
      ${state.folder.files.length ? html`<p><a class="button" href=${`${base}?zip=1`} download>Download all (zip)</a></p>` : null}
      <table class="list"><thead><tr><th>Name</th><th class="num">Size</th><th class="hide-s">Modified</th></tr></thead>
      <tbody>${state.folder.files.map((f) => html`<tr key=${f.name}>
        <td><a href=${`${base}/${f.name.split('/').map(enc).join('/')}?download=1`} download=${f.name.split('/').pop()}>${f.name}</a></td>
        <td class="num">${formatBytes(f.size)}</td><td class="hide-s">${formatDate(f.last_modified)}</td></tr>`)}</tbody></table>
      ${!state.folder.files.length ? html`<p class="muted">Nothing here yet.</p>` : null}
      ${state.folder.allowUpload ? html`<${DropBox} base=${base} onDone=${() => setN((x) => x + 1)} />` : null}</div>`;
  else body = html`<p class="muted">Loading…</p>`;
  return html`<main id="main" class="share-page"><h1>Shared with you</h1>${body}</main>`;
}

function DropBox({ base, onDone }) {
  const [items, setItems] = useState([]);
  const [over, setOver] = useState(false);
  const put = (file, i) =>
    new Promise((resolve) => {
      const xhr = new XMLHttpRequest();
      xhr.open('PUT', `${base}/${(file.webkitRelativePath || file.name).split('/').map(enc).join('/')}`);
      xhr.upload.onprogress = (e) => update(i, { pct: Math.round((e.loaded / e.total) * 100) });
      xhr.onload = () => {
        if (xhr.status < 300) update(i, { pct: 100, done: true });
        else {
          let text = `HTTP ${xhr.status}`;
          try {
            const p = JSON.parse(xhr.responseText);
            text = p.detail ? `${p.title}: ${p.detail}` : p.title;
          } catch {
            /* status line */
          }
          update(i, { error: text });
        }
        resolve();
      };
      xhr.onerror = () => {
        update(i, { error: 'network error' });
        resolve();
      };
      xhr.send(file);
    });
  const update = (i, patch) => setItems((its) => its.map((it, j) => (j === i ? { ...it, ...patch } : it)));
  const send = async (files) => {
    const start = items.length;
    setItems((its) => its.concat(files.map((f) => ({ name: f.name, pct: 0 }))));
    for (let i = 0; i < files.length; i++) await put(files[i], start + i);
    onDone();
  };
  return html`<div class=${'dropzone card' + (over ? ' over' : '')}
    onDragOver=${(e) => { e.preventDefault(); setOver(true); }} onDragLeave=${() => setOver(false)}
    onDrop=${(e) => { e.preventDefault(); setOver(false); send([...e.dataTransfer.files]); }}>
    <h2>Drop files here</h2>
    <label>or choose files <input type="file" multiple onChange=${(e) => send([...e.target.files])} /></label>
    <ul>${items.map((it) => html`<li>${it.name} <progress max="100" value=${it.pct} aria-label=${'Upload of ' + it.name}></progress>
      ${it.done ? ' done' : ''}${it.error ? html` <span class="error-text">${it.error}</span>` : ''}</li>`)}</ul>
  </div>`;
}
