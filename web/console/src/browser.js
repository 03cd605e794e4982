// The file browser: listing (delimiter=/), folders (marker objects),
// upload, download, zip, move, copy, delete, preview and share; a grid
// with one Tab stop and arrow keys.
import { memo } from 'preact/compat';
import { useState, useEffect, useRef, useMemo, useCallback } from 'preact/hooks';
import { call, request, fileURL, saveBlob, formatBytes, formatDate } from './api.js';
import { html, Link, go, Banner, CopyField, Modal, useDialog, useActions } from './ui.js';
import { browserPath } from './buckets.js';
import { Upload, uploadsPending } from './upload.js';
import { Preview, grant } from './preview.js';
import { VersionsDialog, TrashDialog } from './versions.js';

export { Buckets, browserPath } from './buckets.js';
export { forgetUploads } from './upload.js';

const enc = encodeURIComponent;

/** saveURL starts the browser's native download of a same-origin URL. */
function saveURL(url, name) {
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
}

const ROW = 44; // px, the fixed row height of the virtualized list

function useListing(bucket, prefix) {
  const [state, setState] = useState({ entries: [], done: false, error: null });
  const [n, setN] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ entries: n && s.prefix === bucket + '/' + prefix ? s.entries : [], done: false, error: null, prefix: bucket + '/' + prefix }));
    (async () => {
      let cursor = '';
      let all = [];
      for (;;) {
        const q = new URLSearchParams({ prefix, delimiter: '/', limit: '1000' });
        if (cursor) q.set('cursor', cursor);
        let page;
        try {
          page = await call('GET', `buckets/${enc(bucket)}/files?${q}`);
        } catch (error) {
          if (live) setState({ entries: all, done: true, error, prefix: bucket + '/' + prefix });
          return;
        }
        if (!live) return;
        const folders = (page.folders || []).map((f) => ({ folder: true, key: f, name: f.slice(prefix.length), size: -1, date: '' }));
        // The folder's own marker (the empty "prefix/" object that New
        // folder makes, as S3 consoles do) is the folder, not a file in it.
        const files = (page.files || []).filter((f) => f.key !== prefix).map((f) => ({ ...f, name: f.key.slice(prefix.length), date: f.last_modified }));
        all = all.concat(folders, files);
        cursor = page.next_cursor || '';
        setState({ entries: all, done: !cursor, error: null, prefix: bucket + '/' + prefix });
        if (!cursor) return;
      }
    })();
    return () => {
      live = false;
    };
  }, [bucket, prefix, n]);
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

/** namePart checks one folder or file name typed in a dialog. */
function nameProblem(name) {
  if (!name.trim()) return 'Give a name.';
  if (name.includes('/')) return 'A name has no “/” (create folders one at a time).';
  if (name === '.' || name === '..') return '“.” and “..” are not names.';
  if (new TextEncoder().encode(name).length > 255) return 'At most 255 bytes.';
  return '';
}

/** keyProblem checks a full key typed in a dialog (move, copy). */
function keyProblem(key, from) {
  if (!key) return 'Give a name.';
  if (key === from) return 'That is where it is already.';
  if (key.endsWith('/')) return 'A file’s key does not end with “/”.';
  if (key.startsWith('/') || key.includes('//')) return 'No empty folder names: no leading “/” or “//”.';
  if (key.split('/').some((s) => s === '.' || s === '..')) return '“.” and “..” are not folder names.';
  if (new TextEncoder().encode(key).length > 1024) return 'A key has at most 1024 bytes.';
  return '';
}

// The grants behind downloads: a share link for the console's own use
// (grant: listed nowhere, deleted once spent), 5 minutes, one download.
const DOWNLOAD = { expiresIn: 300, max: 1, note: 'console download' };

export function Browser({ bucket, prefix }) {
  const listing = useListing(bucket, prefix);
  const [filter, setFilter] = useState('');
  const [sort, setSort] = useState({ by: 'name', desc: false });
  const [selected, setSelected] = useState(new Set());
  const [active, setActive] = useState(null);
  const [more, setMore] = useState(false);
  // Open the upload panel by itself when uploads of an earlier page are
  // waiting to resume (Golden Retriever restores them when it mounts).
  const [showUpload, setShowUpload] = useState(uploadsPending);
  const [share, setShare] = useState(null);
  const [versions, setVersions] = useState(null);
  const [trash, setTrash] = useState(false);
  const [height, setHeight] = useState(480);
  const box = useRef(null);
  const panel = useRef(null);
  const dialog = useDialog();
  useEffect(() => {
    setSelected(new Set());
    setFilter('');
    setActive(null);
    if (box.current) box.current.scrollTop = 0;
  }, [bucket, prefix]);
  // The list fills the window below what is above it (the upload panel
  // included, whatever its height).
  useEffect(() => {
    const fit = () => setHeight(Math.max(240, window.innerHeight - (box.current ? box.current.getBoundingClientRect().top + window.scrollY : 200) - 16));
    fit();
    window.addEventListener('resize', fit);
    const ro = new ResizeObserver(fit);
    if (panel.current) ro.observe(panel.current);
    return () => {
      window.removeEventListener('resize', fit);
      ro.disconnect();
    };
  }, [showUpload]);
  const needle = filter.trim().toLowerCase();
  const entries = useMemo(() => {
    const all = sortEntries(listing.entries, sort);
    return needle ? all.filter((e) => e.name.toLowerCase().includes(needle)) : all;
  }, [listing.entries, sort, needle]);
  const { act, banners } = useActions(() => {
    listing.reload();
    setSelected(new Set());
  });
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

  // The preview is part of the URL (?file=NAME): bookmarkable, and Back
  // closes it.
  const here = browserPath(bucket, prefix);
  const previewName = new URLSearchParams(location.search).get('file');
  const files = entries.filter((e) => !e.folder);
  const previewIndex = previewName === null ? -1 : files.findIndex((e) => e.name === previewName);
  const preview = previewIndex >= 0 ? files[previewIndex] : null;
  const openPreview = (e, replace) => go(`${here}?file=${enc(e.name)}`, replace, true);
  const closePreview = () => go(here, true, true);
  const missing = previewName !== null && !preview && listing.done;

  // Downloads go through the browser's own download manager, streamed to
  // disk: a download grant of the file (or of the folder, as a zip) is
  // opened as a same-origin download link. Only a selection of several
  // items (no share covers it) is fetched as a zip into memory (POST
  // /zip). docs/console.md, "Downloads".
  const download = async (e) => {
    const s = await grant(bucket, e.key, DOWNLOAD);
    // ?download=1: the server answers Content-Disposition: attachment, so
    // the file is saved, never opened as a document, whatever its type.
    saveURL(s.url + '?download=1', e.key.split('/').pop());
  };
  const zip = async (items, name) => {
    if (items.length === 1 && items[0].folder) {
      const s = await grant(bucket, items[0].key, { ...DOWNLOAD, folder: true });
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
  // After a dialog's action (its errors stay in the dialog).
  const done = (text) => act(async () => {}, text);
  const rename = (e) =>
    dialog.open({
      title: `Rename or move ${e.name}`,
      label: `New key in ${bucket}`,
      hint: 'Use “/” to move it into a folder, e.g. archive/' + e.key.split('/').pop(),
      initial: e.key,
      select: true,
      validate: (to) => keyProblem(to, e.key),
      submit: 'Move',
      onSubmit: async (to) => {
        await call('POST', `${base}/move`, { from: e.key, to });
        done(`Moved to ${to}.`);
      },
    });
  const copy = (e) =>
    dialog.open({
      title: `Copy ${e.name}`,
      label: `Key of the copy in ${bucket}`,
      initial: e.key.replace(/(\.[^./]*)?$/, '-copy$1'),
      select: true,
      validate: (to) => keyProblem(to, e.key),
      submit: 'Copy',
      onSubmit: async (to) => {
        await call('POST', `${base}/copy`, { from: e.key, to });
        done(`Copied to ${to}.`);
      },
    });
  const remove = (items) => {
    if (!items.length) return;
    const names = items.map((e) => e.name);
    const folders = items.some((e) => e.folder);
    dialog.open({
      title: items.length === 1 ? `Delete ${names[0]}?` : `Delete ${items.length} items?`,
      text: (items.length > 1 ? names.slice(0, 5).join(', ') + (names.length > 5 ? ', …' : '') + '. ' : '') +
        (folders ? 'A folder is deleted with everything in it. ' : '') + 'This cannot be undone.',
      submit: 'Delete',
      danger: true,
      onSubmit: async () => {
        const keys = items.filter((e) => !e.folder).map((e) => e.key);
        const bodies = items.filter((e) => e.folder).map((e) => ({ prefix: e.key }));
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
        done('Deleted.');
      },
    });
  };
  // A folder is a marker object, an empty "prefix/name/" (what S3
  // consoles make): it stays when it is empty, and goes with a delete of
  // the folder.
  const newFolder = () =>
    dialog.open({
      title: 'New folder',
      label: 'Folder name',
      hint: prefix ? `Inside ${prefix}` : `At the top of ${bucket}`,
      validate: (name) => nameProblem(name) || (listing.entries.some((x) => x.key === prefix + name + '/') ? 'There is a folder of this name here already.' : ''),
      submit: 'Create folder',
      onSubmit: async (name) => {
        await request('PUT', fileURL(bucket, prefix + name + '/'), new Blob([], { type: 'application/x-directory' }), {
          headers: { 'If-None-Match': '*' },
        });
        done(`Folder ${name} created.`);
      },
    });
  const open = (e) => (e.folder ? go(browserPath(bucket, e.key)) : openPreview(e));
  const crumbs = prefix.split('/').filter(Boolean);
  const allSelected = entries.length > 0 && selected.size === entries.length;
  const sortButton = (by, label) => html`<button class="plain sort" aria-label=${'Sort by ' + label}
    aria-pressed=${sort.by === by} onClick=${() => setSort({ by, desc: sort.by === by ? !sort.desc : false })}>${label}${sort.by === by ? (sort.desc ? ' ▾' : ' ▴') : ''}</button>`;
  const focused = entries.find((e) => e.key === active);
  const onGridKey = (e) => {
    if (!entries.length || e.altKey) return;
    const i = Math.max(0, entries.findIndex((x) => x.key === active));
    const move = (j) => {
      e.preventDefault();
      setActive(entries[Math.max(0, Math.min(entries.length - 1, j))].key);
    };
    const onRow = e.target.getAttribute('role') === 'row';
    switch (e.key) {
      case 'ArrowDown':
        return move(i + 1);
      case 'ArrowUp':
        return move(i - 1);
      case 'Home':
        return move(0);
      case 'End':
        return move(entries.length - 1);
      case 'PageDown':
        return move(i + Math.floor(height / ROW));
      case 'PageUp':
        return move(i - Math.floor(height / ROW));
      case 'Enter':
        if (!onRow) return;
        e.preventDefault();
        return open(entries[i]);
      case ' ':
        if (!onRow) return;
        e.preventDefault();
        return toggle(entries[i].key);
      case 'Delete':
        e.preventDefault();
        return remove(chosen.length ? chosen : [entries[i]]);
      case 'a':
        if (!(e.ctrlKey || e.metaKey) || !onRow) return;
        e.preventDefault();
        return setSelected(allSelected ? new Set() : new Set(entries.map((x) => x.key)));
    }
  };

  return html`<section class="browser">
    <h1 class="sr">${prefix ? `Folder ${prefix} in ${bucket}` : `Bucket ${bucket}`}</h1>
    <nav class="crumbs" aria-label="Breadcrumbs">
      <${Link} href="/buckets">Buckets</${Link}>${' / '}<${Link} href=${browserPath(bucket, '')}>${bucket}</${Link}>
      ${crumbs.map((c, i) => html` / <${Link} href=${browserPath(bucket, crumbs.slice(0, i + 1).join('/') + '/')}>${c}</${Link}>`)}
    </nav>
    ${banners}<${Banner} error=${listing.error} />
    ${missing ? html`<${Banner} error=${`No file named ${previewName} here.`} onClose=${closePreview} />` : null}
    <div class="toolbar" role="toolbar" aria-label="File actions">
      <button class="primary" aria-expanded=${showUpload} onClick=${() => setShowUpload(!showUpload)}>Upload</button>
      <button onClick=${newFolder}>New folder</button>
      <button class="more-toggle" aria-expanded=${more} aria-controls="more-actions" onClick=${() => setMore(!more)}>
        ${chosen.length ? `Actions (${chosen.length})` : 'More'}</button>
      <div id="more-actions" class=${'more' + (more ? ' open' : '')}>
        <button disabled=${!chosen.length} onClick=${downloadSelection}>Download</button>
        <button disabled=${chosen.length !== 1} onClick=${() => setShare(chosen[0])}>Share</button>
        <button onClick=${() => setShare({ folder: true, key: prefix, name: prefix || bucket })}>Share this folder</button>
        <button disabled=${chosen.length !== 1 || chosen[0].folder} onClick=${() => rename(chosen[0])}>Rename/move</button>
        <button disabled=${chosen.length !== 1 || chosen[0].folder} onClick=${() => copy(chosen[0])}>Copy</button>
        <button disabled=${chosen.length !== 1 || chosen[0].folder} onClick=${() => setVersions(chosen[0])}>Versions</button>
        <button onClick=${() => setTrash(true)}>Deleted files</button>
        <button class="danger" disabled=${!chosen.length} onClick=${() => remove(chosen)}>Delete</button>
      </div>
      <label class="filter">Filter <input type="search" placeholder="part of a name" value=${filter}
        onInput=${(e) => setFilter(e.target.value)} /></label>
    </div>
    ${showUpload && html`<div ref=${panel}><${Upload} bucket=${bucket} prefix=${prefix} onDone=${() => listing.reload()}
      onClose=${() => setShowUpload(false)} /></div>`}
    <div class="status muted" role="status">
      ${entries.length} item(s)${needle ? ` matching “${filter.trim()}”` : ''}${listing.done ? '' : ', loading…'}${selected.size ? `, ${selected.size} selected` : ''}
    </div>
    <div class="grid" role="grid" aria-label=${'Files in ' + (prefix || bucket)} aria-rowcount=${entries.length + 1}
      aria-multiselectable="true" onKeyDown=${onGridKey}>
      <div class="grid-head" role="row" aria-rowindex="1">
        <span role="columnheader"><input type="checkbox" aria-label="Select all" checked=${allSelected}
          onChange=${() => setSelected(allSelected ? new Set() : new Set(entries.map((e) => e.key)))} /></span>
        <span role="columnheader">${sortButton('name', 'Name')}</span>
        <span role="columnheader" class="num">${sortButton('size', 'Size')}</span>
        <span role="columnheader" class="hide-s">${sortButton('date', 'Modified')}</span>
      </div>
      <${Rows} entries=${entries} selected=${selected} toggle=${toggle} height=${height} box=${box}
        bucket=${bucket} prefix=${prefix} active=${focused ? active : entries.length ? entries[0].key : null}
        setActive=${setActive} onOpen=${open} />
    </div>
    ${listing.done && entries.length === 0
      ? html`<p class="muted empty" role="status">${needle
          ? `No files match “${filter.trim()}”.`
          : 'This folder is empty. Upload files, or create a folder.'}</p>`
      : null}
    ${preview && html`<${Preview} key=${'preview'} bucket=${bucket} entry=${preview}
      prev=${files[previewIndex - 1]} next=${files[previewIndex + 1]} onMove=${(e) => openPreview(e, true)}
      onClose=${closePreview} onDownload=${() => act(() => download(preview))} />`}
    ${share && html`<${ShareDialog} bucket=${bucket} entry=${share} onClose=${() => setShare(null)} />`}
    ${versions && html`<${VersionsDialog} bucket=${bucket} entry=${versions} onClose=${() => setVersions(null)} onChange=${() => listing.reload()} />`}
    ${trash && html`<${TrashDialog} bucket=${bucket} onClose=${() => setTrash(false)} onChange=${() => listing.reload()} />`}
    ${dialog.node}
  </section>`;
}

/**
 * Rows is the virtualized grid body: only the rows in view (and a margin)
 * are in the DOM, so a folder of 10,000 entries scrolls like one of 30.
 * Its scroll position is its own state: scrolling re-renders only the
 * rows. One row is the grid's Tab stop (active); the arrow keys move it
 * (Browser's onGridKey), and it is scrolled into view and focused.
 */
const Rows = memo(function Rows({ entries, selected, toggle, height, box, bucket, prefix, active, setActive, onOpen }) {
  const [scroll, setScroll] = useState(0);
  const frame = useRef(0);
  const moved = useRef(false);
  useEffect(() => setScroll(0), [bucket, prefix]);
  const onScroll = (e) => {
    const top = e.target.scrollTop;
    cancelAnimationFrame(frame.current);
    frame.current = requestAnimationFrame(() => setScroll(top));
  };
  const index = entries.findIndex((e) => e.key === active);
  useEffect(() => {
    // After a key moved the Tab stop: scroll it into view and focus it
    // (it is always rendered, see below).
    if (!moved.current || index < 0 || !box.current) return;
    moved.current = false;
    const el = box.current;
    if (index * ROW < el.scrollTop) el.scrollTop = index * ROW;
    else if ((index + 1) * ROW > el.scrollTop + el.clientHeight) el.scrollTop = (index + 1) * ROW - el.clientHeight;
    const row = el.querySelector(`[data-key="${CSS.escape(active)}"]`);
    if (row) row.focus({ preventScroll: true });
  }, [active]);
  const first = Math.max(0, Math.floor(scroll / ROW) - 10);
  const last = Math.min(entries.length, first + Math.ceil(height / ROW) + 20);
  const shown = entries.slice(first, last).map((e, i) => [e, first + i]);
  if (index >= 0 && (index < first || index >= last)) shown.push([entries[index], index]);
  const focusIn = (e) => {
    const row = e.target.closest('[role=row]');
    if (row && row.dataset.key !== active) setActive(row.dataset.key);
  };
  return html`<div class="rows" role="rowgroup" ref=${box} style=${{ height: height + 'px' }} onScroll=${onScroll}
      onfocusin=${focusIn} onKeyDownCapture=${(e) => { if (/^(Arrow|Home|End|Page)/.test(e.key)) moved.current = true; }}>
      <div style=${{ height: entries.length * ROW + 'px', position: 'relative' }}>
        ${shown.map(([e, i]) => html`<${Row} key=${e.key} e=${e} index=${i} checked=${selected.has(e.key)} stop=${e.key === active}
          toggle=${toggle} bucket=${bucket} onOpen=${onOpen} />`)}
      </div>
    </div>`;
});

const Row = memo(function Row({ e, index, checked, stop, toggle, bucket, onOpen }) {
  return html`<div class="row" role="row" aria-rowindex=${index + 2} aria-selected=${checked ? 'true' : 'false'}
      tabindex=${stop ? 0 : -1} style=${{ top: index * ROW + 'px' }} data-key=${e.key}
      aria-label=${(e.folder ? 'Folder ' : '') + e.name}>
    <span role="gridcell"><input type="checkbox" tabindex="-1" aria-label=${'Select ' + e.name} checked=${checked} onChange=${() => toggle(e.key)} /></span>
    <span role="gridcell" class="name">${e.folder
      ? html`<${Link} class="folder" tabindex="-1" href=${browserPath(bucket, e.key)}>${e.name}</${Link}>`
      : html`<button class="plain file" tabindex="-1" onClick=${() => onOpen(e)}>${e.name}</button>`}</span>
    <span role="gridcell" class="num">${e.folder ? '' : formatBytes(e.size)}</span>
    <span role="gridcell" class="hide-s muted">${formatDate(e.date)}</span>
  </div>`;
});

export function shareLink(token) {
  return `${location.origin}/share#${token}`;
}

function ShareDialog({ bucket, entry, onClose }) {
  const [expires, setExpires] = useState(7 * 86400);
  const [password, setPassword] = useState('');
  const [maxDownloads, setMax] = useState('');
  const [upload, setUpload] = useState(false);
  const [note, setNote] = useState('');
  const [made, setMade] = useState(null);
  const [error, setError] = useState(null);
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
  return html`<${Modal} label="Share link" title=${`Share ${entry.folder ? 'folder' : 'file'} ${entry.name}`} className="share" onClose=${onClose}>
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
  </${Modal}>`;
}
