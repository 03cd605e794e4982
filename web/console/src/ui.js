// Shared UI pieces: htm bound to Preact, the router, the message banner.
import { h } from 'preact';
import { useState, useEffect } from 'preact/hooks';
import htm from 'htm';

export const html = htm.bind(h);

const routeListeners = new Set();

/** go navigates to path inside the console (history API). */
export function go(path, replace) {
  if (replace) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
  routeListeners.forEach((fn) => fn());
  window.scrollTo(0, 0);
}

window.addEventListener('popstate', () => routeListeners.forEach((fn) => fn()));

/** useRoute re-renders its component on every navigation. */
export function useRoute() {
  const [, set] = useState(0);
  useEffect(() => {
    const fn = () => set((n) => n + 1);
    routeListeners.add(fn);
    return () => routeListeners.delete(fn);
  }, []);
  return { path: location.pathname, hash: location.hash };
}

/** Link is an <a> that navigates inside the console. */
export function Link({ href, children, onClick: also, ...rest }) {
  const onClick = (e) => {
    if (also) also(e);
    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    go(href);
  };
  return html`<a href=${href} onClick=${onClick} ...${rest}>${children}</a>`;
}

/** Banner shows an error's title and detail (never a raw body). */
export function Banner({ error, kind, onClose }) {
  if (!error) return null;
  const text = typeof error === 'string' ? error : error.message;
  let wait = '';
  if (error && error.status === 429 && error.retryAfter !== undefined) wait = ` Try again in ${error.retryAfter} s.`;
  return html`<div class=${'banner ' + (kind || 'error')} role=${kind === 'ok' ? 'status' : 'alert'}>
    <span>${text}${wait}</span>
    ${onClose && html`<button class="plain" aria-label="Dismiss" onClick=${onClose}>×</button>`}
  </div>`;
}

/** useAsync runs fn when deps change: {data, error, loading, reload}. */
export function useAsync(fn, deps) {
  const [state, setState] = useState({ loading: true });
  const [n, setN] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    fn().then(
      (data) => live && setState({ data, loading: false }),
      (error) => live && setState({ error, loading: false }),
    );
    return () => {
      live = false;
    };
  }, [...deps, n]);
  return { ...state, reload: () => setN((x) => x + 1) };
}

/** copyText copies to the clipboard, returning whether it worked. */
export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    return false;
  }
}

export function CopyField({ label, value, id }) {
  const [done, setDone] = useState('');
  return html`<div class="copyfield">
    <label for=${id}>${label}</label>
    <div class="row">
      <input id=${id} readonly value=${value} onFocus=${(e) => e.target.select()} />
      <button type="button" onClick=${async () => setDone((await copyText(value)) ? 'Copied' : 'Select and copy')}>Copy</button>
      <span class="muted" aria-live="polite">${done}</span>
    </div>
  </div>`;
}
