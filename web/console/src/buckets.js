// The bucket list: name, contents (objects and bytes), visibility,
// versioning, create and delete.
import { useState } from 'preact/hooks';
import { call, formatBytes, formatDate } from './api.js';
import { html, Link, Banner, useAsync, useDialog, useActions } from './ui.js';

const enc = encodeURIComponent;

export function browserPath(bucket, prefix) {
  return `/b/${enc(bucket)}/${prefix.split('/').map(enc).join('/')}`;
}

/** The bucket naming rule, as the server checks it (object.ValidBucketName). */
export const BUCKET_RULE =
  '3 to 63 characters: lower-case letters, digits, hyphens (-) and dots (.), starting and ending with a letter or digit. ' +
  'Bucket names are shared by everyone on this server.';

/** bucketProblem says what is wrong with a bucket name ("" if nothing). */
export function bucketProblem(name) {
  if (!name) return 'Give the bucket a name.';
  if (/[^a-z0-9.-]/.test(name)) return 'Only lower-case letters, digits, hyphens (-) and dots (.) are allowed.';
  if (name.length < 3 || name.length > 63) return `A bucket name has 3 to 63 characters (this one has ${name.length}).`;
  if (!/^[a-z0-9]/.test(name) || !/[a-z0-9]$/.test(name)) return 'A bucket name starts and ends with a letter or a digit.';
  if (/\.\.|\.-|-\./.test(name)) return 'A dot may not stand next to another dot or a hyphen.';
  if (/^\d+\.\d+\.\d+\.\d+$/.test(name)) return 'A bucket name may not look like an IP address.';
  if (/^(xn--|sthree-|amzn-s3-demo-)/.test(name) || /(-s3alias|--ol-s3|\.mrap|--x-s3)$/.test(name))
    return 'This prefix or suffix is reserved by S3.';
  return '';
}

/** versioningText says what a versioning change did. */
function versioningText(name, v) {
  return v === 'Enabled'
    ? `${name} keeps versions now: overwritten and deleted files can be brought back.`
    : `Versioning of ${name} is suspended: new writes replace the file; the versions kept stay.`;
}

function contents(b) {
  if (b.objects === undefined) return '';
  return `${b.objects} ${b.objects === 1 ? 'object' : 'objects'}, ${formatBytes(b.bytes)}`;
}

export function Buckets() {
  const list = useAsync(() => call('GET', 'buckets'), []);
  const [name, setName] = useState('');
  const [touched, setTouched] = useState(false);
  const [visibility, setVisibility] = useState('private');
  const dialog = useDialog();
  const { act, banners, setMsg } = useActions(list.reload);
  const problem = bucketProblem(name);
  const create = async (e) => {
    e.preventDefault();
    setTouched(true);
    if (problem) {
      e.target.querySelector('input[name=bucket]').focus();
      return;
    }
    if ((await act(() => call('POST', 'buckets', { name, visibility }), `Bucket ${name} created.`)) !== undefined) {
      setName('');
      setTouched(false);
    }
  };
  const remove = (b) =>
    dialog.open({
      title: `Delete the bucket ${b.name}?`,
      text: b.objects ? `It holds ${contents(b)}: a bucket must be empty to be deleted.` : 'It is empty.',
      submit: 'Delete bucket',
      danger: true,
      onSubmit: async () => {
        await call('DELETE', `buckets/${enc(b.name)}`);
        setMsg(`Bucket ${b.name} deleted.`);
        list.reload();
      },
    });
  const buckets = (list.data && list.data.buckets) || [];
  const showProblem = touched || name !== '';
  return html`<section>
    <h1>Buckets</h1>
    ${banners}<${Banner} error=${list.error} />
    <form class="inline card create-bucket" onSubmit=${create} aria-label="Create a bucket" noValidate>
      <label>Name <input name="bucket" required maxlength="63" value=${name} autocomplete="off" spellcheck="false"
        aria-invalid=${showProblem && problem ? 'true' : 'false'} aria-describedby="bucket-rule bucket-problem"
        onInput=${(e) => setName(e.target.value)} placeholder="my-files" /></label>
      <label>Visibility <select value=${visibility} onChange=${(e) => setVisibility(e.target.value)}>
        <option value="private">private</option><option value="public-read">public-read</option></select></label>
      <button type="submit" class="primary">Create bucket</button>
      <p id="bucket-rule" class="muted hint">${BUCKET_RULE}</p>
      <p id="bucket-problem" class="error-text" aria-live="polite">${showProblem ? problem : ''}</p>
    </form>
    ${list.loading && !list.data ? html`<p class="muted">Loading…</p>` : null}
    <table class="list buckets">
      <thead><tr><th>Name</th><th class="hide-s">Contents</th><th>Visibility</th><th>Versioning</th><th class="hide-s">Created</th><th><span class="sr">Actions</span></th></tr></thead>
      <tbody>
        ${buckets.map((b) => html`<tr key=${b.name} data-bucket=${b.name}>
          <td class="wrap"><${Link} href=${browserPath(b.name, '')}>${b.name}</${Link}>
            <div class="show-s muted small">${b.gateway ? 'gateway' : contents(b)}</div></td>
          <td class="contents hide-s">${b.gateway ? html`<span class="muted">gateway</span>` : contents(b)}</td>
          <td><select aria-label=${'Visibility of ' + b.name} value=${b.visibility}
            onChange=${(e) => act(() => call('PATCH', `buckets/${enc(b.name)}`, { visibility: e.target.value }), `${b.name} is now ${e.target.value}.`)}>
            <option value="private">private</option><option value="public-read">public</option></select></td>
          <td>${b.gateway ? html`<span class="muted">—</span>` : html`<select aria-label=${'Versioning of ' + b.name} value=${b.versioning || ''}
            onChange=${(e) => act(() => call('PATCH', `buckets/${enc(b.name)}`, { versioning: e.target.value }), versioningText(b.name, e.target.value))}>
            ${b.versioning ? null : html`<option value="">off</option>`}
            <option value="Enabled">on</option><option value="Suspended">suspended</option></select>`}</td>
          <td class="hide-s">${formatDate(b.created_at)}</td>
          <td class="actions"><button class="danger" aria-label=${'Delete bucket ' + b.name} onClick=${() => remove(b)}>Delete</button></td>
        </tr>`)}
      </tbody>
    </table>
    ${list.data && buckets.length === 0 ? html`<p class="muted">No buckets yet.</p>` : null}
    ${dialog.node}
  </section>`;
}
