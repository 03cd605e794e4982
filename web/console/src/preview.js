// File previews. The rule (issue 18, N1): user content never becomes a
// document in the console's origin. A blob: URL is such a document when
// opened on its own, so only raster images typed by their own bytes get
// one, revoked once loaded; SVG, PDF, video and audio load from a
// short-lived /s/ link (the server's nosniff and sandbox CSP); text and
// markdown are shown as text and sanitized nodes. docs/console.md,
// "Security model".
import { useState, useEffect, useRef } from 'preact/hooks';
import { call, request, fileURL, formatBytes } from './api.js';
import { html, Banner, Modal } from './ui.js';

const TEXT_LIMIT = 1 << 20;
// Images bigger than this are not fetched into the page for a preview.
const IMAGE_LIMIT = 64 << 20;

export function kindOf(entry) {
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
 * grant makes a download grant of bucket/key (a share link for the
 * console's own use, listed nowhere, deleted once spent or when the
 * preview closes): expires_in seconds, max downloads (0: no limit).
 */
export async function grant(bucket, key, { expiresIn, max, note, folder }) {
  const body = { bucket, grant: true, expires_in: expiresIn, note };
  if (folder) body.prefix = key;
  else body.key = key;
  if (max) body.max_downloads = max;
  return call('POST', 'shares', body);
}

/**
 * Preview shows entry in a modal with Previous/Next (and the arrow keys)
 * over files, the neighbours in the list's order: onMove(entry).
 */
export function Preview({ bucket, entry, prev, next, onMove, onClose, onDownload }) {
  const [state, setState] = useState({ loading: true });
  const kind = kindOf(entry);
  useEffect(() => {
    setState({ loading: true });
    let url = null;
    let shareId = null;
    let live = true;
    // The page goes away (a navigation, a closed tab) with the preview
    // open: no clean-up runs then, so revoke the grant on pagehide.
    const leave = () => {
      if (shareId) revokeGrant(shareId);
      shareId = null;
    };
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
          const g = await grant(bucket, entry.key, { expiresIn: 3600, note: 'console preview' });
          // Closed (or moved on) before the grant came back: the clean-up
          // found no grant to revoke, so revoke it here, never leave it.
          if (!live) return revokeGrant(g.id);
          shareId = g.id;
          window.addEventListener('pagehide', leave);
          setState({ url: g.url });
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
      window.removeEventListener('pagehide', leave);
      if (shareId) revokeGrant(shareId);
      shareId = null;
    };
  }, [entry.key]);
  const revoke = (e) => {
    // The image is decoded: its blob: URL is no longer needed, and a
    // revoked one cannot be opened elsewhere.
    if (e.target.src.startsWith('blob:')) URL.revokeObjectURL(e.target.src);
  };
  const keys = (e) => {
    if (e.target.closest('input, textarea, select, video, audio')) return;
    if (e.key === 'ArrowLeft' && prev) {
      e.preventDefault();
      onMove(prev);
    } else if (e.key === 'ArrowRight' && next) {
      e.preventDefault();
      onMove(next);
    }
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
    body = html`<pre class="preview-text" data-testid="preview-text" tabindex="0">${state.text}</pre>${state.cut ? html`<p class="muted">First 1 MiB shown.</p>` : null}`;
  else body = html`<p class="muted">No preview for this type (${entry.content_type || 'unknown'}).</p>`;
  const actions = html`<span class="muted meta">${formatBytes(entry.size)} · ${entry.content_type}</span>
    <span class="buttons">
      <button type="button" disabled=${!prev} onClick=${() => onMove(prev)} aria-label="Previous file">‹ Previous</button>
      <button type="button" disabled=${!next} onClick=${() => onMove(next)} aria-label="Next file">Next ›</button>
      <button type="button" onClick=${onDownload}>Download</button>
    </span>`;
  return html`<${Modal} label=${'Preview of ' + entry.name} title=${entry.name} className="preview" onClose=${onClose}
      closeLabel="Close preview" actions=${actions} onKeyDown=${keys}>
    <div class="preview-body">${body}</div>
  </${Modal}>`;
}

/**
 * Markdown renders text through markdown.js (loaded on first use): marked,
 * sanitized by DOMPurify into a DOM fragment inserted as nodes. The HTML
 * of user data is never assigned to innerHTML; the console's CSP blocks
 * what is left anyway (no inline script, images only from this origin).
 */
// revokeGrant deletes a preview's short-lived grant with a keepalive
// request, which the browser completes even when the page is being left.
function revokeGrant(id) {
  call('DELETE', `shares/${id}`, undefined, { keepalive: true }).catch(() => {});
}

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
