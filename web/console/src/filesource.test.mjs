// node --test web/console/src/filesource.test.mjs (run by test/console's
// TestWholeFileReader).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { wholeFileReader } from './filesource.js';

const bytes = (b) => b.arrayBuffer().then((a) => new TextDecoder().decode(a));

test('a PATCH of the whole input sends the input itself, not a slice', async () => {
  const blob = new Blob(['0123456789']);
  const src = await wholeFileReader.openFile(blob, Infinity);
  assert.equal(src.size, 10);
  // tus-js-client asks for [offset, min(offset + chunkSize, size)).
  const whole = await src.slice(0, 10);
  assert.equal(whole.value, blob);
  assert.equal(whole.done, true);
  const beyond = await src.slice(0, Infinity);
  assert.equal(beyond.value, blob);
  assert.equal(beyond.done, true);
});

test('a resumed or chunked PATCH sends the slice it asks for', async () => {
  const blob = new Blob(['0123456789']);
  const src = await wholeFileReader.openFile(blob, 4);
  const first = await src.slice(0, 4);
  assert.notEqual(first.value, blob);
  assert.equal(await bytes(first.value), '0123');
  assert.equal(first.done, false);
  const rest = await src.slice(4, 10);
  assert.equal(await bytes(rest.value), '456789');
  assert.equal(rest.done, true);
  const tail = await src.slice(8, 12);
  assert.equal(await bytes(tail.value), '89');
  assert.equal(tail.done, true);
  src.close();
});

test('what is not a File or Blob is refused', async () => {
  await assert.rejects(wholeFileReader.openFile({ read() {} }, 4));
  await assert.rejects(wholeFileReader.openFile(null, 4));
});
