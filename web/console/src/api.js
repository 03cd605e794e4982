// The file API client: every call of the console goes through here, to
// the documented /api/v1 on the same origin.
//
// Tokens: the access token lives in this module's memory only (never
// localStorage, never a URL). The refresh token lives in an HttpOnly
// cookie scoped to /api/v1/auth, which the server sets when a request
// carries X-Coffer-Session: cookie (docs/console.md); this script never
// sees it.

const SESSION = { 'X-Coffer-Session': 'cookie' };
let access = null;
let expiresAt = 0;
let refreshing = null;
const listeners = new Set();

export class ApiError extends Error {
  constructor(status, problem, retryAfter) {
    const title = (problem && problem.title) || `HTTP ${status}`;
    const detail = (problem && problem.detail) || '';
    super(detail ? `${title}: ${detail}` : title);
    this.status = status;
    this.title = title;
    this.detail = detail;
    this.code = problem && problem.code;
    this.extra = (problem && problem.extra) || {};
    this.retryAfter = retryAfter;
  }
}

/** onAuthChange(fn) calls fn(signedIn) whenever the session starts or ends. */
export function onAuthChange(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

function setSession(s) {
  const was = access !== null;
  if (s) {
    access = s.access_token;
    expiresAt = Date.now() + (s.expires_in || 900) * 1000;
  } else {
    access = null;
    expiresAt = 0;
  }
  if (was !== (access !== null)) listeners.forEach((fn) => fn(access !== null));
}

export function signedIn() {
  return access !== null;
}

/** problemOf turns a failed response into an ApiError (title/detail of the problem). */
export async function problemOf(res) {
  let problem = null;
  const ct = res.headers.get('Content-Type') || '';
  try {
    if (ct.includes('json')) problem = await res.json();
    else {
      const text = (await res.text()).trim();
      problem = { title: res.statusText || `HTTP ${res.status}`, detail: text.slice(0, 300) };
    }
  } catch {
    /* keep the status line */
  }
  const ra = res.headers.get('Retry-After');
  return new ApiError(res.status, problem, ra ? Number(ra) : undefined);
}

/** refresh gets a new access token with the refresh cookie (single flight). */
export function refresh() {
  if (!refreshing) {
    refreshing = fetch('/api/v1/auth/refresh', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...SESSION },
      body: '{}',
      credentials: 'same-origin',
    })
      .then(async (res) => {
        if (!res.ok) {
          setSession(null);
          throw await problemOf(res);
        }
        setSession(await res.json());
        return access;
      })
      .finally(() => {
        refreshing = null;
      });
  }
  return refreshing;
}

/**
 * resume continues this browser's session, if its refresh cookie holds one
 * (POST /auth/resume: a 200 either way, so a visitor who is not signed in
 * costs no failed request). Returns whether a session is on.
 */
export async function resume() {
  const res = await fetch('/api/v1/auth/resume', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...SESSION },
    body: '{}',
    credentials: 'same-origin',
  });
  if (!res.ok) throw await problemOf(res);
  const s = await res.json();
  if (!s.signed_in) {
    forgetSince();
    setSession(null);
    return false;
  }
  setSession(s);
  return true;
}

// SINCE is when this browser's session started (its sign-in), kept in
// localStorage: the session outlives a reload (the refresh cookie), and so
// must the time it began. Not a secret.
const SINCE = 'coffer.session-since';

function forgetSince() {
  try {
    localStorage.removeItem(SINCE);
  } catch {
    /* storage unavailable */
  }
}

/** sessionSince is when this browser's session started, or null if unknown. */
export function sessionSince() {
  try {
    const v = localStorage.getItem(SINCE);
    return v ? new Date(v) : null;
  } catch {
    return null;
  }
}

/** token returns a valid access token, refreshing it when it is about to expire. */
export async function token() {
  if (access && Date.now() < expiresAt - 60000) return access;
  return refresh();
}

/**
 * request calls the API. body: an object (sent as JSON) or a Blob/File.
 * Returns the Response (ok) or throws an ApiError. On a 401 it refreshes
 * once and retries.
 */
export async function request(method, path, body, opts = {}) {
  const send = async () => {
    const headers = { ...(opts.headers || {}) };
    if (!opts.anonymous) headers.Authorization = `Bearer ${await token()}`;
    let payload;
    if (body instanceof Blob) payload = body;
    else if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      payload = JSON.stringify(body);
    }
    return fetch(path.startsWith('/') ? path : `/api/v1/${path}`, {
      method,
      headers,
      body: payload,
      credentials: 'same-origin',
      signal: opts.signal,
      // keepalive: the request outlives the page (a clean-up sent just
      // before a navigation or a closed tab still reaches the server).
      keepalive: !!opts.keepalive,
    });
  };
  let res = await send();
  if (res.status === 401 && !opts.anonymous && access) {
    await refresh();
    res = await send();
  }
  if (!res.ok) throw await problemOf(res);
  return res;
}

/** call is request + JSON decoding (null for 204). */
export async function call(method, path, body, opts) {
  const res = await request(method, path, body, opts);
  if (res.status === 204) return null;
  const ct = res.headers.get('Content-Type') || '';
  return ct.includes('json') ? res.json() : null;
}

export async function login(email, password) {
  const res = await fetch('/api/v1/auth/login', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...SESSION },
    body: JSON.stringify({ email, password }),
    credentials: 'same-origin',
  });
  if (!res.ok) throw await problemOf(res);
  const s = await res.json();
  try {
    localStorage.setItem(SINCE, new Date().toISOString());
  } catch {
    /* storage unavailable: the start stays unknown */
  }
  setSession(s);
}

export async function signup(email, password, inviteCode) {
  const body = { email, password };
  if (inviteCode) body.invite_code = inviteCode;
  return call('POST', 'auth/signup', body, { anonymous: true });
}

export async function logout() {
  try {
    await fetch('/api/v1/auth/logout', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...SESSION },
      body: '{}',
      credentials: 'same-origin',
    });
  } finally {
    forgetSince();
    setSession(null);
  }
}

export async function changePassword(oldPassword, newPassword) {
  const res = await request('POST', 'me/password', { old_password: oldPassword, new_password: newPassword }, { headers: SESSION });
  setSession(await res.json());
}

/** path of a file: each key segment percent-encoded. */
export function fileURL(bucket, key) {
  return `/api/v1/buckets/${encodeURIComponent(bucket)}/files/${key.split('/').map(encodeURIComponent).join('/')}`;
}

/**
 * saveBlob offers blob to the user as a download named name. The blob: URL
 * is typed application/octet-stream (never the response's type): opened
 * on its own it is a download, not a document of the console's origin.
 */
export function saveBlob(blob, name) {
  const url = URL.createObjectURL(new Blob([blob], { type: 'application/octet-stream' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}

export { formatBytes } from './bytes.js';

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

export function formatDate(s) {
  if (!s) return '';
  return dateFormat.format(new Date(s));
}
