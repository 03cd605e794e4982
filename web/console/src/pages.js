// Shares, S3 access keys, the account, and the administrator's pages.
import { useState } from 'preact/hooks';
import { call, changePassword, formatBytes, formatDate, sessionSince } from './api.js';
import { html, Banner, useAsync, CopyField, Link, useDialog, useActions } from './ui.js';
import { browserPath } from './browser.js';

const enc = encodeURIComponent;

const STATE = { active: 'active', revoked: 'revoked', expired: 'expired', used_up: 'used up' };

export function Shares() {
  const list = useAsync(() => call('GET', 'shares'), []);
  const { act, banners, setMsg } = useActions(list.reload);
  const dialog = useDialog();
  const shares = (list.data && list.data.shares) || [];
  const what = (s) => `${s.bucket}/${s.folder ? s.prefix : s.key}`;
  const end = (s) =>
    s.state === 'active'
      ? dialog.open({
          title: 'Revoke this link?',
          text: `The link to ${what(s)} stops working at once. It stays in this list as revoked until you delete it.`,
          submit: 'Revoke',
          danger: true,
          onSubmit: async () => {
            await call('DELETE', `shares/${s.id}`);
            setMsg('Link revoked.');
            list.reload();
          },
        })
      : act(() => call('DELETE', `shares/${s.id}`), 'Link deleted.');
  return html`<section>
    <h1>Share links</h1>
    <p class="muted">Create links from the file browser (select a file and press Share, or “Share this folder”).
      The console’s own short-lived download links are not listed.</p>
    ${banners}<${Banner} error=${list.error} />
    <table class="list shares">
      <thead><tr><th>What</th><th>State</th><th class="hide-s">Downloads</th><th class="hide-s">Expires</th><th><span class="sr">Actions</span></th></tr></thead>
      <tbody>${shares.map((s) => html`<tr key=${s.id} data-share=${s.id}>
        <td class="wrap"><${Link} href=${browserPath(s.bucket, s.folder ? s.prefix : s.key.replace(/[^/]*$/, ''))}>${what(s)}</${Link}>
          ${s.password ? html` <span role="img" aria-label="password">🔒</span>` : ''}${s.allow_upload ? ' (drop box)' : ''}${s.note ? html` <span class="muted">${s.note}</span>` : ''}</td>
        <td><span class=${'state ' + s.state}>${STATE[s.state] || s.state}</span></td>
        <td class="hide-s">${s.downloads}${s.max_downloads ? ` / ${s.max_downloads}` : ''}</td>
        <td class="hide-s">${formatDate(s.expires_at)}</td>
        <td class="actions"><button class="danger" aria-label=${(s.state === 'active' ? 'Revoke link to ' : 'Delete link to ') + (s.key || s.prefix || s.bucket)}
          onClick=${() => end(s)}>${s.state === 'active' ? 'Revoke' : 'Delete'}</button></td>
      </tr>`)}</tbody>
    </table>
    ${list.data && !shares.length ? html`<p class="muted">No share links.</p>` : null}
    ${dialog.node}
  </section>`;
}

// scopeText is a key's or app token's scope in a few words.
export function scopeText(sc) {
  if (!sc) return 'everything';
  if (sc.policy) return 'inline policy';
  return `${sc.access} ${sc.bucket ? `${sc.bucket}/${sc.prefix || ''}*` : 'every bucket'}`;
}

// keyRequest is the body creating a key or app token from the form: a
// bucket without an access is read-write in it.
function keyRequest(f) {
  const body = {};
  if (f.name) body.name = f.name;
  if (f.bucket || f.access) {
    body.scope = { access: f.access || 'read-write' };
    if (f.bucket) body.scope.bucket = f.bucket;
    if (f.bucket && f.prefix) body.scope.prefix = f.prefix;
  }
  if (f.days) body.expires_in = Math.round(Number(f.days) * 86400);
  return body;
}

const NO_FORM = { name: '', kind: 'keys', bucket: '', prefix: '', access: '', days: '' };

export function Keys() {
  const list = useAsync(() => call('GET', 'keys'), []);
  const tokens = useAsync(() => call('GET', 'tokens'), []);
  const reload = () => {
    list.reload();
    tokens.reload();
  };
  const { act, banners, setMsg } = useActions(reload);
  const dialog = useDialog();
  const [form, setForm] = useState(NO_FORM);
  const [made, setMade] = useState(null);
  const keys = (list.data && list.data.keys) || [];
  const apps = (tokens.data && tokens.data.tokens) || [];
  const field = (k) => (e) => setForm({ ...form, [k]: e.target.value });
  const create = async (e) => {
    e.preventDefault();
    const k = await act(() => call('POST', form.kind, keyRequest(form)));
    if (k) {
      setMade({ ...k, kind: form.kind });
      setForm(NO_FORM);
    }
  };
  const revoke = (kind, id) =>
    dialog.open({
      title: `Revoke ${id}?`,
      text: kind === 'keys' ? 'Every client using this key stops working at once.' : 'Every app using this token stops working at once.',
      submit: kind === 'keys' ? 'Revoke key' : 'Revoke token',
      danger: true,
      onSubmit: async () => {
        await call('DELETE', `${kind}/${enc(id)}`);
        setMsg(kind === 'keys' ? 'Key revoked.' : 'App token revoked.');
        reload();
      },
    });
  const expiry = (k) => (k.expired ? html`<span class="state expired">expired</span> ${formatDate(k.expires_at)}` : formatDate(k.expires_at) || 'never');
  const s3 = `http://${location.hostname}:9000`;
  return html`<section>
    <h1>S3 access keys</h1>
    <p class="muted">A key (or an app token, a bearer token for the file API) may be limited to one bucket, a folder in it,
      and reading or writing, and may expire. It never does more than you can.</p>
    ${banners}<${Banner} error=${list.error || tokens.error} />
    <form class="inline card" onSubmit=${create}>
      <label>Name (optional) <input value=${form.name} onInput=${field('name')} placeholder="laptop backup" /></label>
      <label>Kind <select value=${form.kind} onChange=${field('kind')}>
        <option value="keys">S3 key</option><option value="tokens">App token (file API)</option></select></label>
      <label>Bucket (optional) <input value=${form.bucket} onInput=${field('bucket')} placeholder="every bucket" /></label>
      <label>Folder prefix (optional) <input value=${form.prefix} onInput=${field('prefix')} placeholder="uploads/" disabled=${!form.bucket} /></label>
      <label>Access <select value=${form.access} onChange=${field('access')}>
        <option value="">${form.bucket ? 'read and write' : 'everything you can'}</option>
        <option value="read">read only</option><option value="write">write only</option><option value="read-write">read and write</option></select></label>
      <label>Expires in days (optional) <input type="number" min="1" step="1" value=${form.days} onInput=${field('days')} placeholder="never" /></label>
      <button class="primary" type="submit">${form.kind === 'keys' ? 'Create key' : 'Create app token'}</button>
    </form>
    ${made && made.kind === 'keys' && html`<div class="card secret" role="status">
      <h2>New key ${made.name}</h2>
      <p><strong>The secret is shown only now.</strong> Copy it somewhere safe. Scope: ${scopeText(made.scope)}; expires: ${formatDate(made.expires_at) || 'never'}.</p>
      <${CopyField} id="key-id" label="Access key ID" value=${made.access_key_id} />
      <${CopyField} id="key-secret" label="Secret access key" value=${made.secret_access_key} />
      <${CopyField} id="key-aws" label="aws cli" value=${`AWS_ACCESS_KEY_ID=${made.access_key_id} AWS_SECRET_ACCESS_KEY=${made.secret_access_key} aws --endpoint-url ${s3} s3 ls`} />
      <${CopyField} id="key-rclone" label="rclone" value=${`rclone config create coffer s3 provider=Other endpoint=${s3} access_key_id=${made.access_key_id} secret_access_key=${made.secret_access_key} force_path_style=true region=us-east-1`} />
      <p class="muted">The S3 endpoint is the server's --s3-listen (default port 9000); adjust it if yours differs.</p>
      <button onClick=${() => setMade(null)}>Done</button>
    </div>`}
    ${made && made.kind === 'tokens' && html`<div class="card secret" role="status">
      <h2>New app token ${made.name}</h2>
      <p><strong>The token is shown only now.</strong> Copy it somewhere safe. Scope: ${scopeText(made.scope)}; expires: ${formatDate(made.expires_at) || 'never'}.</p>
      <${CopyField} id="token" label="App token" value=${made.token} />
      <${CopyField} id="token-curl" label="curl" value=${`curl -H 'Authorization: Bearer ${made.token}' ${location.origin}/api/v1/buckets`} />
      <button onClick=${() => setMade(null)}>Done</button>
    </div>`}
    <table class="list keys">
      <thead><tr><th>Access key ID</th><th class="hide-s">Name</th><th>Scope</th><th class="hide-s">Expires</th><th class="hide-s">Created</th><th class="hide-s">Last used</th><th><span class="sr">Actions</span></th></tr></thead>
      <tbody>${keys.map((k) => html`<tr key=${k.access_key_id} data-key-id=${k.access_key_id}>
        <td><code>${k.access_key_id}</code></td><td class="hide-s">${k.name}</td><td class="wrap">${scopeText(k.scope)}</td>
        <td class="hide-s">${expiry(k)}</td>
        <td class="hide-s">${formatDate(k.created_at)}</td><td class="hide-s">${formatDate(k.last_used) || 'never'}</td>
        <td class="actions"><button class="danger" aria-label=${'Revoke key ' + k.access_key_id}
          onClick=${() => revoke('keys', k.access_key_id)}>Revoke</button></td>
      </tr>`)}</tbody>
    </table>
    <h2>App tokens</h2>
    <table class="list tokens">
      <thead><tr><th>Token ID</th><th class="hide-s">Name</th><th>Scope</th><th class="hide-s">Expires</th><th class="hide-s">Created</th><th class="hide-s">Last used</th><th><span class="sr">Actions</span></th></tr></thead>
      <tbody>${apps.map((k) => html`<tr key=${k.id} data-token-id=${k.id}>
        <td><code>${k.id}</code></td><td class="hide-s">${k.name}</td><td class="wrap">${scopeText(k.scope)}</td>
        <td class="hide-s">${expiry(k)}</td>
        <td class="hide-s">${formatDate(k.created_at)}</td><td class="hide-s">${formatDate(k.last_used) || 'never'}</td>
        <td class="actions"><button class="danger" aria-label=${'Revoke app token ' + k.id}
          onClick=${() => revoke('tokens', k.id)}>Revoke</button></td>
      </tr>`)}</tbody>
    </table>
    ${tokens.data && !apps.length ? html`<p class="muted">No app tokens.</p>` : null}
    ${dialog.node}
  </section>`;
}

export function UsageBar({ usage, quota }) {
  if (!quota) return html`<p>${formatBytes(usage)} used (no quota).</p>`;
  const pct = Math.min(100, Math.round((usage / quota) * 100));
  return html`<div class="usage">
    <label for="usage">${formatBytes(usage)} of ${formatBytes(quota)} used (${pct} %)</label>
    <progress id="usage" max="100" value=${pct} class=${pct > 90 ? 'high' : ''}>${pct} %</progress>
  </div>`;
}

export function Account({ me }) {
  const { act, banners } = useActions(me.reload);
  const [oldPw, setOld] = useState('');
  const [newPw, setNew] = useState('');
  const u = me.data || {};
  const submit = (e) => {
    e.preventDefault();
    act(() => changePassword(oldPw, newPw), 'Password changed. Your other sessions have ended.').then(() => {
      setOld('');
      setNew('');
    });
  };
  const since = sessionSince();
  return html`<section>
    <h1>Account</h1>
    ${banners}
    <p>Signed in as <strong>${u.email}</strong>${since
      ? html` since <time datetime=${since.toISOString()} data-testid="session-since">${formatDate(since)}</time>`
      : ''}. Account created ${formatDate(u.created_at)}.</p>
    <${UsageBar} usage=${u.usage_bytes} quota=${u.quota_bytes} />
    <form class="stack card" onSubmit=${submit} aria-label="Change password">
      <h2>Change password</h2>
      <label>Current password <input type="password" autocomplete="current-password" required value=${oldPw} onInput=${(e) => setOld(e.target.value)} /></label>
      <label>New password (8 or more characters) <input type="password" autocomplete="new-password" required minlength="8" value=${newPw} onInput=${(e) => setNew(e.target.value)} /></label>
      <button class="primary" type="submit">Change password</button>
    </form>
  </section>`;
}

const GiB = 1 << 30;

export function Admin({ isAdmin }) {
  if (!isAdmin) return html`<section><h1>Administration</h1><p role="alert">Administrators only.</p></section>`;
  return html`<${AdminPage} />`;
}

function AdminPage() {
  const server = useAsync(() => call('GET', 'admin/server'), []);
  const [q, setQ] = useState('');
  const users = useAsync(() => call('GET', `admin/users?${new URLSearchParams({ q, limit: '200' })}`), [q]);
  const invites = useAsync(() => call('GET', 'admin/invites'), []);
  const reload = () => {
    users.reload();
    invites.reload();
    server.reload();
  };
  const { act, banners, setMsg } = useActions(reload);
  const dialog = useDialog();
  const [invite, setInvite] = useState(null);
  const [inviteEmail, setInviteEmail] = useState('');
  const s = server.data || {};
  const setQuota = (u) =>
    dialog.open({
      title: `Quota of ${u.email}`,
      label: 'Quota in GiB (0 = unlimited)',
      initial: u.quota_bytes ? String(u.quota_bytes / GiB) : '0',
      validate: (v) => (v.trim() === '' || !(Number(v) >= 0) ? 'A number of GiB, 0 or more (decimals allowed).' : ''),
      submit: 'Set quota',
      onSubmit: async (v) => {
        await call('PUT', `admin/users/${enc(u.id)}/quota`, { quota_bytes: Math.round(Number(v) * GiB) });
        setMsg(`Quota of ${u.email} set.`);
        reload();
      },
    });
  const ask = (title, text, submit, fn, done) =>
    dialog.open({
      title,
      text,
      submit,
      danger: true,
      onSubmit: async () => {
        await fn();
        setMsg(done);
        reload();
      },
    });
  const makeInvite = async (e) => {
    e.preventDefault();
    const inv = await act(() => call('POST', 'admin/invites', inviteEmail ? { email: inviteEmail } : {}));
    if (inv) setInvite(inv);
  };
  return html`<section>
    <h1>Administration</h1>
    ${banners}
    <div class="card"><h2>Server</h2>
      ${server.data
        ? html`<dl class="facts"><dt>Version</dt><dd>${s.version} (${s.revision || '—'}, ${s.go_version})</dd>
          <dt>Up since</dt><dd>${formatDate(s.started_at)}</dd><dt>Stores</dt><dd>${s.meta_store} metadata, ${s.blob_store} blobs</dd>
          <dt>Users</dt><dd>${s.users}</dd><dt>Buckets</dt><dd>${s.buckets}</dd><dt>Objects</dt><dd>${s.objects} (${formatBytes(s.bytes)})</dd></dl>`
        : html`<${Banner} error=${server.error} />`}
    </div>
    <h2>Users</h2>
    <label>Search by email <input type="search" value=${q} onInput=${(e) => setQ(e.target.value)} /></label>
    <${Banner} error=${users.error} />
    <table class="list">
      <thead><tr><th>Email</th><th>Usage / quota</th><th class="hide-s">Role</th><th><span class="sr">Actions</span></th></tr></thead>
      <tbody>${((users.data && users.data.users) || []).map((u) => html`<tr key=${u.id}>
        <td class="wrap">${u.email}${u.disabled ? html` <span class="state revoked">disabled</span>` : ''}</td>
        <td>${formatBytes(u.usage_bytes)} / ${u.quota_bytes ? formatBytes(u.quota_bytes) : '∞'}</td>
        <td class="hide-s">${u.admin ? 'admin' : 'user'}</td>
        <td class="actions">
          <button onClick=${() => setQuota(u)} aria-label=${'Set quota of ' + u.email}>Quota</button>
          ${u.disabled
            ? html`<button onClick=${() => act(() => call('POST', `admin/users/${enc(u.id)}/enable`), `${u.email} enabled.`)}>Enable</button>`
            : html`<button onClick=${() => ask(`Disable ${u.email}?`, 'Their sessions, keys and share links stop working until you enable them again.',
                'Disable', () => call('POST', `admin/users/${enc(u.id)}/disable`), `${u.email} disabled.`)}>Disable</button>`}
          <button class="danger" onClick=${() => ask(`Delete ${u.email}?`, 'The account and ALL its files, buckets, keys and links are deleted. This cannot be undone.',
            'Delete account', () => call('DELETE', `admin/users/${enc(u.id)}?purge=true`), `${u.email} deleted.`)}>Delete</button>
        </td></tr>`)}</tbody>
    </table>
    <h2>Invites</h2>
    <form class="inline card" onSubmit=${makeInvite}>
      <label>For email (optional) <input type="email" value=${inviteEmail} onInput=${(e) => setInviteEmail(e.target.value)} /></label>
      <button class="primary" type="submit">Create invite</button>
    </form>
    ${invite && html`<div class="card secret"><${CopyField} id="invite-link" label="Invite link (shown once)"
      value=${`${location.origin}/signup#invite=${invite.code}`} /></div>`}
    <table class="list">
      <thead><tr><th>For</th><th>State</th><th class="hide-s">Uses left</th><th class="hide-s">Expires</th><th><span class="sr">Actions</span></th></tr></thead>
      <tbody>${((invites.data && invites.data.invites) || []).map((i) => html`<tr key=${i.id}>
        <td class="wrap">${i.email || 'anyone'}</td><td>${i.state}</td><td class="hide-s">${i.uses_left} / ${i.uses}</td><td class="hide-s">${formatDate(i.expires_at)}</td>
        <td class="actions">${i.state === 'active' ? html`<button class="danger" onClick=${() => act(() => call('DELETE', `admin/invites/${enc(i.id)}`), 'Invite revoked.')}>Revoke</button>` : null}</td>
      </tr>`)}</tbody>
    </table>
    <${AuditLog} />
    ${dialog.node}
  </section>`;
}

// AuditLog lists the node's recent audit events (GET /api/v1/admin/audit,
// docs/audit.md), filtered by action (or a prefix ending in ".") and actor.
function AuditLog() {
  const [action, setAction] = useState('');
  const [actor, setActor] = useState('');
  const [applied, setApplied] = useState({ action: '', actor: '' });
  const params = new URLSearchParams({ limit: '200' });
  if (applied.action) params.set('action', applied.action);
  if (applied.actor) params.set('actor', applied.actor);
  const log = useAsync(() => call('GET', `admin/audit?${params}`), [applied.action, applied.actor]);
  const events = (log.data && log.data.events) || [];
  const who = (a) => (a.type === 'key' ? a.id : a.name || a.id || '');
  const what = (t) =>
    [t.bucket && t.key ? `${t.bucket}/${t.key}` : t.bucket, t.version_id && `version ${t.version_id}`, t.share && `link ${t.share}`,
      t.email || t.user, t.access_key && `key ${t.access_key}`, t.kms_key, t.invite && `invite ${t.invite}`, t.job && `job ${t.job}`]
      .filter(Boolean).join(', ');
  const apply = (e) => {
    e.preventDefault();
    setApplied({ action: action.trim(), actor: actor.trim() });
  };
  return html`<h2 id="audit">Audit log</h2>
    <form class="inline card" onSubmit=${apply} aria-label="Filter the audit log">
      <label>Action <input name="action" value=${action} placeholder="share. or auth.signin" onInput=${(e) => setAction(e.target.value)} /></label>
      <label>Actor <input name="actor" value=${actor} placeholder="user ID, key ID or email" onInput=${(e) => setActor(e.target.value)} /></label>
      <button type="submit">Filter</button>
      <button type="button" onClick=${() => log.reload()}>Refresh</button>
    </form>
    <${Banner} error=${log.error} />
    ${log.data && !log.data.enabled
      ? html`<p>The audit log is off: start the server with <code>--audit-log</code> or <code>--audit-webhook</code>.</p>`
      : null}
    <table class="list audit">
      <thead><tr><th>Time</th><th>Action</th><th>Outcome</th><th>Actor</th><th class="hide-s">Target</th><th class="hide-s">Client</th><th class="hide-s">Request</th></tr></thead>
      <tbody>${events.map((e, i) => html`<tr key=${e.time + i}>
        <td>${formatDate(e.time)}</td>
        <td class="wrap">${e.action}</td>
        <td><span class=${'state ' + (e.outcome === 'success' ? 'active' : 'revoked')}>${e.outcome}</span>${e.reason ? html` <small>${e.reason}</small>` : ''}</td>
        <td class="wrap">${e.actor.type}${who(e.actor) ? ' ' + who(e.actor) : ''}</td>
        <td class="wrap hide-s">${what(e.target || {})}</td>
        <td class="hide-s">${e.client || ''}</td>
        <td class="hide-s"><code>${e.request_id || ''}</code></td>
      </tr>`)}</tbody>
    </table>
    ${log.data && events.length === 0 ? html`<p>No events.</p>` : null}`;
}
