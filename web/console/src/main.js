// Coffer's web console: the shell, sign in / sign up, and routing.
import { render } from 'preact';
import { useState, useEffect } from 'preact/hooks';
import '@uppy/core/css/style.min.css';
import '@uppy/dashboard/css/style.min.css';
import './style.css';
import { login, signup, logout, resume, onAuthChange, signedIn, call } from './api.js';
import { html, Link, go, useRoute, Banner } from './ui.js';
import { Buckets, Browser, forgetUploads } from './browser.js';
import { Shares, Keys, Account, Admin } from './pages.js';
import { SharePage } from './share.js';

function SignIn() {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e) => {
    e.preventDefault();
    setError(null);
    setBusy(true);
    try {
      await login(email, password);
      go('/buckets', true);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return html`<main id="main" class="auth">
    <h1>Sign in to Coffer</h1>
    <form class="stack card" onSubmit=${submit}>
      <${Banner} error=${error} />
      <label>Email <input type="email" name="email" autocomplete="username" required value=${email} onInput=${(e) => setEmail(e.target.value)} /></label>
      <label>Password <input type="password" name="password" autocomplete="current-password" required value=${password} onInput=${(e) => setPassword(e.target.value)} /></label>
      <button class="primary" type="submit" disabled=${busy}>Sign in</button>
    </form>
    <p>No account? <${Link} href="/signup">Create one</${Link}> (if this server allows sign-ups or you have an invite).</p>
  </main>`;
}

function SignUp() {
  const invite = new URLSearchParams(location.hash.slice(1)).get('invite') || '';
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [code, setCode] = useState(invite);
  const [error, setError] = useState(null);
  const submit = async (e) => {
    e.preventDefault();
    setError(null);
    try {
      await signup(email, password, code.trim());
      await login(email, password);
      go('/buckets', true);
    } catch (err) {
      setError(err);
    }
  };
  return html`<main id="main" class="auth">
    <h1>Create an account</h1>
    <form class="stack card" onSubmit=${submit}>
      <${Banner} error=${error} />
      <label>Email <input type="email" autocomplete="username" required value=${email} onInput=${(e) => setEmail(e.target.value)} /></label>
      <label>Password (8 or more characters) <input type="password" autocomplete="new-password" required minlength="8" value=${password} onInput=${(e) => setPassword(e.target.value)} /></label>
      <label>Invite code (if you have one) <input value=${code} onInput=${(e) => setCode(e.target.value)} /></label>
      <button class="primary" type="submit">Create account</button>
    </form>
    <p>Have an account? <${Link} href="/login">Sign in</${Link}></p>
  </main>`;
}

function Shell({ children, isAdmin, email }) {
  const [open, setOpen] = useState(false);
  const path = location.pathname;
  const item = (href, label, match) => html`<li><${Link} href=${href} aria-current=${path.startsWith(match || href) ? 'page' : undefined}
    onClick=${() => setOpen(false)}>${label}</${Link}></li>`;
  return html`<div class="shell">
    <a class="skip" href="#main">Skip to content</a>
    <header class="top">
      <${Link} class="brand" href="/buckets">Coffer</${Link}>
      <button class="menu plain" aria-expanded=${open} aria-controls="nav" onClick=${() => setOpen(!open)}>Menu</button>
      <nav id="nav" class=${open ? 'open' : ''} aria-label="Main">
        <ul>
          ${item('/buckets', 'Files', '/b')}
          ${item('/shares', 'Shares')}
          ${item('/keys', 'S3 keys')}
          ${item('/account', 'Account')}
          ${isAdmin ? item('/admin', 'Admin') : null}
        </ul>
      </nav>
      <span class="who muted hide-s">${email}</span>
      <button class="plain" onClick=${async () => { forgetUploads(); await logout(); go('/login', true); }}>Sign out</button>
    </header>
    <main id="main">${children}</main>
  </div>`;
}

function App() {
  const { path } = useRoute();
  const [auth, setAuth] = useState(signedIn() ? 'in' : 'unknown');
  const [isAdmin, setAdmin] = useState(false);
  const [me, setMe] = useState({});
  const [n, setN] = useState(0);
  useEffect(() => onAuthChange((on) => setAuth(on ? 'in' : 'out')), []);
  // A session of this browser continues (the refresh cookie) without a
  // failed request when there is none: POST /auth/resume answers 200
  // either way.
  useEffect(() => {
    if (path === '/share') return;
    resume().then((on) => setAuth(on ? 'in' : 'out'), () => setAuth('out'));
  }, []);
  useEffect(() => {
    if (auth !== 'in') {
      setAdmin(false);
      return;
    }
    // The console shows the admin pages to administrators only (/me says
    // who is one); the API refuses everyone else (403) whatever the
    // console shows.
    call('GET', 'me').then(
      (data) => {
        setMe({ data });
        setAdmin(!!data.admin);
      },
      (error) => setMe({ error }),
    );
  }, [auth, n]);
  const meState = { ...me, reload: () => setN((x) => x + 1) };

  // Keyed by the fragment (the token): another link in the same tab is
  // another page.
  if (path === '/share') return html`<${SharePage} key=${location.hash} />`;
  if (auth === 'unknown') return html`<main id="main" class="auth"><p class="muted">Loading…</p></main>`;
  if (auth === 'out') {
    if (path === '/signup') return html`<${SignUp} />`;
    if (path !== '/login') {
      history.replaceState(null, '', '/login');
    }
    return html`<${SignIn} />`;
  }
  let page;
  const parts = path.split('/');
  if (path === '/' || path === '/login' || path === '/signup' || path === '/buckets') {
    if (path !== '/buckets') history.replaceState(null, '', '/buckets');
    page = html`<${Buckets} />`;
  } else if (parts[1] === 'b' && parts[2]) {
    const bucket = decodeURIComponent(parts[2]);
    const prefix = parts.slice(3).map(decodeURIComponent).join('/');
    page = html`<${Browser} bucket=${bucket} prefix=${prefix} />`;
  } else if (path === '/shares') page = html`<${Shares} />`;
  else if (path === '/keys') page = html`<${Keys} />`;
  else if (path === '/account') page = html`<${Account} me=${meState} />`;
  else if (path === '/admin') page = html`<${Admin} isAdmin=${isAdmin} />`;
  else page = html`<section><h1>Not found</h1><p>No such page. <${Link} href="/buckets">Go to your files</${Link}>.</p></section>`;
  return html`<${Shell} isAdmin=${isAdmin} email=${me.data && me.data.email}>${page}</${Shell}>`;
}

render(html`<${App} />`, document.getElementById('app'));
