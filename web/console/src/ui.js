// Shared UI pieces: htm bound to Preact, the router, the message banner,
// modal dialogs.
import { h } from 'preact';
import { useState, useEffect, useRef } from 'preact/hooks';
import htm from 'htm';

export const html = htm.bind(h);

const routeListeners = new Set();

/**
 * go navigates to path inside the console (history API): a new history
 * entry, or the current one replaced; to the top of the page unless
 * stay (a dialog of the same page, such as the preview).
 */
export function go(path, replace, stay) {
  if (replace) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
  routeListeners.forEach((fn) => fn());
  if (!stay) window.scrollTo(0, 0);
}

// A change of the fragment alone (one share link after another in the same
// tab) is a navigation too.
window.addEventListener('popstate', () => routeListeners.forEach((fn) => fn()));
window.addEventListener('hashchange', () => routeListeners.forEach((fn) => fn()));

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

/**
 * useActions runs the page's actions: act(fn, ok) clears the banners, runs
 * fn, shows ok (a success message) and calls reload, or shows fn's error;
 * it returns fn's result (undefined after an error). banners renders both.
 */
export function useActions(reload) {
  const [error, setError] = useState(null);
  const [msg, setMsg] = useState('');
  const act = async (fn, ok) => {
    setError(null);
    setMsg('');
    try {
      const r = await fn();
      if (ok) setMsg(ok);
      if (reload) reload();
      return r;
    } catch (e) {
      setError(e);
      return undefined;
    }
  };
  const banners = html`<${Banner} error=${error} onClose=${() => setError(null)} />${msg && html`<${Banner} kind="ok" error=${msg} onClose=${() => setMsg('')} />`}`;
  return { act, banners, setMsg, setError };
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

const FOCUSABLE = 'a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea:not([disabled]), iframe, video[controls], audio[controls], [tabindex]:not([tabindex="-1"])';

/**
 * Modal is the console's modal dialog: a native <dialog> opened with
 * showModal (the page behind is inert), labelled by its title, closed by
 * Escape or its × button, with Tab and Shift+Tab kept inside it, and the
 * focus given back to what had it before. onClose runs once it closed.
 * label: the accessible name; title: the heading shown (default label).
 */
export function Modal({ label, title, onClose, className, children, actions, onKeyDown, closeLabel }) {
  const dlg = useRef(null);
  useEffect(() => {
    const before = document.activeElement;
    dlg.current.showModal();
    const first = dlg.current.querySelector('[autofocus]') || dlg.current.querySelector(FOCUSABLE);
    if (first) first.focus();
    return () => {
      if (before && before.isConnected && typeof before.focus === 'function') before.focus();
    };
  }, []);
  const keep = (e) => {
    if (onKeyDown) onKeyDown(e);
    if (e.key !== 'Tab' || e.defaultPrevented) return;
    const all = [...dlg.current.querySelectorAll(FOCUSABLE)].filter((el) => el.offsetParent !== null || el === document.activeElement);
    if (!all.length) return;
    const first = all[0];
    const last = all[all.length - 1];
    if (e.shiftKey && (document.activeElement === first || !dlg.current.contains(document.activeElement))) {
      e.preventDefault();
      last.focus();
    } else if (!e.shiftKey && (document.activeElement === last || !dlg.current.contains(document.activeElement))) {
      e.preventDefault();
      first.focus();
    }
  };
  return html`<dialog ref=${dlg} class=${'modal ' + (className || '')} aria-label=${label} onClose=${onClose} onKeyDown=${keep}>
    <header><h2>${title || label}</h2>${actions}
      <button type="button" class="plain close" aria-label=${closeLabel || 'Close'} onClick=${() => dlg.current.close()}>×</button></header>
    ${children}
  </dialog>`;
}

/** problemText is what a dialog shows of a failed call: the problem's title and detail. */
export function problemText(err) {
  if (!err) return '';
  if (typeof err === 'string') return err;
  let text = err.message || String(err);
  if (err.status === 429 && err.retryAfter !== undefined) text += ` Try again in ${err.retryAfter} s.`;
  return text;
}

/**
 * AskDialog asks for one value (label, initial) or, without label, only a
 * confirmation. validate(value) returns what is wrong with it ("" if
 * nothing), shown under the field as it is typed; onSubmit(value) does
 * the work and may throw: its error (the server's problem) is shown in the
 * dialog, which stays open. The dialog closes when onSubmit succeeds.
 */
export function AskDialog({ title, text, label, initial, hint, validate, submit, danger, onSubmit, onClose, select }) {
  const [value, setValue] = useState(initial || '');
  const [touched, setTouched] = useState(false);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const field = useRef(null);
  const closer = useRef(null);
  useEffect(() => {
    if (field.current && select) {
      // Select the name without its extension, as file managers do.
      const dot = value.lastIndexOf('.');
      const slash = value.lastIndexOf('/') + 1;
      field.current.setSelectionRange(slash, dot > slash ? dot : value.length);
    }
  }, []);
  const problem = label && validate ? validate(value) : '';
  const send = async (e) => {
    e.preventDefault();
    setTouched(true);
    if (problem) {
      field.current && field.current.focus();
      return;
    }
    setBusy(true);
    setError(null);
    try {
      await onSubmit(value);
      closer.current.closest('dialog').close();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const show = touched || (value !== (initial || '') && value !== '');
  return html`<${Modal} label=${title} onClose=${onClose} className="ask">
    <form class="stack" onSubmit=${send} noValidate>
      ${text ? html`<p>${text}</p>` : null}
      ${label
        ? html`<label>${label}
            <input ref=${field} autofocus value=${value} aria-invalid=${show && problem ? 'true' : 'false'}
              aria-describedby="ask-hint ask-problem" onInput=${(e) => setValue(e.target.value)} /></label>
          ${hint ? html`<p id="ask-hint" class="muted hint">${hint}</p>` : null}
          <p id="ask-problem" class="error-text" aria-live="polite">${show ? problem : ''}</p>`
        : null}
      ${error ? html`<div class="banner error" role="alert">${problemText(error)}</div>` : null}
      <div class="buttons">
        <button type="button" ref=${closer} autofocus=${!label} onClick=${(e) => e.target.closest('dialog').close()}>Cancel</button>
        <button type="submit" class=${danger ? 'danger solid' : 'primary'} disabled=${busy}>${submit}</button>
      </div>
    </form>
  </${Modal}>`;
}

/** useDialog holds one dialog at a time: open(props) shows an AskDialog. */
export function useDialog() {
  const [props, setProps] = useState(null);
  const node = props ? html`<${AskDialog} ...${props} onClose=${() => setProps(null)} />` : null;
  return { open: setProps, node };
}
