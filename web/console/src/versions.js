// Versions and the trash: a file's versions (download, restore, delete a
// version), and a bucket's deleted files (undelete). docs/api.md,
// "Versions"; docs/console.md.
import { useState, useEffect } from 'preact/hooks';
import { call, request, fileURL, saveBlob, formatBytes, formatDate } from './api.js';
import { html, Banner, Modal, useDialog } from './ui.js';

const enc = encodeURIComponent;

/** useAll loads every page of a paged listing (path gives a page's URL). */
function useAll(path, field) {
  const [state, setState] = useState({ items: [], done: false, error: null });
  const [n, setN] = useState(0);
  useEffect(() => {
    let live = true;
    (async () => {
      let items = [];
      let cursor = '';
      try {
        for (;;) {
          const page = await call('GET', path(cursor));
          if (!live) return;
          items = items.concat(page[field] || []);
          cursor = page.next_cursor || '';
          setState({ items, done: !cursor, error: null });
          if (!cursor) return;
        }
      } catch (error) {
        if (live) setState({ items, done: true, error });
      }
    })();
    return () => {
      live = false;
    };
  }, [path(''), n]);
  return { ...state, reload: () => setN((x) => x + 1) };
}

/**
 * VersionsDialog lists a file's versions and delete markers, newest first:
 * download a version (fetched with the token into memory, saved as
 * application/octet-stream: no share link names a version), restore one
 * (it becomes the latest, as a new version), delete one for good; each
 * change after a confirmation. onChange runs after a change (the listing
 * behind it reloads).
 */
export function VersionsDialog({ bucket, entry, onClose, onChange }) {
  const base = `buckets/${enc(bucket)}`;
  const list = useAll((c) => `${base}/versions/${entry.key.split('/').map(enc).join('/')}?limit=1000${c ? '&cursor=' + enc(c) : ''}`, 'versions');
  const [msg, setMsg] = useState(null);
  const [error, setError] = useState(null);
  const dialog = useDialog();
  const changed = (text) => {
    setMsg(text);
    list.reload();
    onChange();
  };
  const download = async (v) => {
    setError(null);
    try {
      const res = await request('GET', `${fileURL(bucket, entry.key)}?version_id=${enc(v.version_id)}`);
      saveBlob(await res.blob(), entry.name);
    } catch (err) {
      setError(err);
    }
  };
  const restore = (v, label) =>
    dialog.open({
      title: `Restore ${label}?`,
      text: `It becomes the latest version of ${entry.name}, as a new version; the versions after it stay.`,
      submit: 'Restore',
      onSubmit: async () => {
        await call('POST', `${base}/restore`, { key: entry.key, version_id: v.version_id });
        changed(`The content of ${label} is the latest version again.`);
      },
    });
  const remove = (v, label) =>
    dialog.open({
      title: `Delete ${label}?`,
      text: v.delete_marker
        ? 'The version before it becomes the latest: the file is back.'
        : `This version of ${entry.name} is deleted for good${v.is_latest ? '; the version before it becomes the latest' : ''}. This cannot be undone.`,
      submit: v.delete_marker ? 'Remove' : 'Delete version',
      danger: true,
      onSubmit: async () => {
        await request('DELETE', `${fileURL(bucket, entry.key)}?version_id=${enc(v.version_id)}`);
        changed('Deleted.');
      },
    });
  const what = (v) => (v.delete_marker ? 'deleted' : formatBytes(v.size));
  // Versions are numbered from the oldest (1), so that two saved in the
  // same minute have names of their own.
  const n = list.items.length;
  const name = (v, i) => `${v.delete_marker ? 'delete marker' : 'version'} ${n - i} (${formatDate(v.last_modified)})`;
  return html`<${Modal} label=${'Versions of ' + entry.name} className="versions" onClose=${onClose}>
    <div>
      ${msg ? html`<${Banner} kind="ok" error=${msg} onClose=${() => setMsg(null)} />` : null}
      <${Banner} error=${list.error || error} />
      ${!list.done && !list.items.length ? html`<p class="muted">Loading…</p>` : null}
      ${list.done && !list.items.length && !list.error ? html`<p class="muted">This file has no versions.</p>` : null}
      ${list.items.length
        ? html`<table class="list versions-list">
            <caption class="sr">Versions of ${entry.name}, newest first</caption>
            <thead><tr><th>Saved</th><th class="num">Size</th><th><span class="sr">Actions</span></th></tr></thead>
            <tbody>
              ${list.items.map((v, i) => html`<tr key=${v.version_id} data-version=${v.version_id}>
                <td class="wrap"><span class="muted">${n - i}.</span> ${formatDate(v.last_modified)}
                  ${v.is_latest ? html` <span class="state active">latest</span>` : null}
                  ${v.delete_marker ? html` <span class="state revoked">delete marker</span>` : null}</td>
                <td class="num">${what(v)}</td>
                <td class="actions">
                  ${v.delete_marker
                    ? null
                    : html`<button aria-label=${'Download ' + name(v, i)} onClick=${() => download(v)}>Download</button>`}
                  ${v.delete_marker || v.is_latest
                    ? null
                    : html`<button aria-label=${'Restore ' + name(v, i)} onClick=${() => restore(v, name(v, i))}>Restore</button>`}
                  <button class="danger" aria-label=${'Delete ' + name(v, i)} onClick=${() => remove(v, name(v, i))}>Delete</button>
                </td>
              </tr>`)}
            </tbody>
          </table>`
        : null}
      <p class="muted hint">Share links always serve the latest version.</p>
    </div>
  </${Modal}>${dialog.node}`;
}

/**
 * TrashDialog lists the bucket's deleted files (keys whose latest version
 * is a delete marker), with undelete.
 */
export function TrashDialog({ bucket, onClose, onChange }) {
  const base = `buckets/${enc(bucket)}`;
  const [versioning, setVersioning] = useState(true);
  useEffect(() => {
    call('GET', base).then((b) => setVersioning(!!b.versioning), () => {});
  }, [base]);
  const list = useAll((c) => `${base}/trash?limit=1000${c ? '&cursor=' + enc(c) : ''}`, 'files');
  const [msg, setMsg] = useState(null);
  const [error, setError] = useState(null);
  const undelete = async (f) => {
    setError(null);
    try {
      await call('POST', `${base}/undelete`, { key: f.key });
      setMsg(`${f.key} is back.`);
      list.reload();
      onChange();
    } catch (err) {
      setError(err);
    }
  };
  return html`<${Modal} label=${'Deleted files in ' + bucket} className="trash" onClose=${onClose}>
    <div>
      ${msg ? html`<${Banner} kind="ok" error=${msg} onClose=${() => setMsg(null)} />` : null}
      <${Banner} error=${list.error || error} />
      ${!versioning
        ? html`<p class="muted">Versioning is off for this bucket: a deleted file is gone for good. Turn versioning on under Buckets to keep deleted files here.</p>`
        : null}
      ${!list.done && !list.items.length ? html`<p class="muted">Loading…</p>` : null}
      ${list.done && !list.items.length && !list.error ? html`<p class="muted">No deleted files.</p>` : null}
      ${list.items.length
        ? html`<table class="list trash-list">
            <caption class="sr">Deleted files in ${bucket}</caption>
            <thead><tr><th>File</th><th class="hide-s">Deleted</th><th><span class="sr">Actions</span></th></tr></thead>
            <tbody>
              ${list.items.map((f) => html`<tr key=${f.key} data-key=${f.key}>
                <td class="wrap">${f.key}<div class="show-s muted small">${formatDate(f.deleted_at)}</div></td>
                <td class="hide-s">${formatDate(f.deleted_at)}</td>
                <td class="actions"><button aria-label=${'Undelete ' + f.key} onClick=${() => undelete(f)}>Undelete</button></td>
              </tr>`)}
            </tbody>
          </table>`
        : null}
    </div>
  </${Modal}>`;
}
