// node --test web/console/src/progress.test.mjs (run by test/console's
// TestProgressThrottle).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { throttleProgress } from './progress.js';

function fakeUppy() {
  const seen = [];
  return { seen, emit(event, ...args) { seen.push([event, ...args]); } };
}

test('at most one progress event per file and interval, and always the last', () => {
  const uppy = fakeUppy();
  let t = 0;
  throttleProgress(uppy, 500, () => t);
  const a = { id: 'a' };
  const b = { id: 'b' };
  for (let i = 1; i <= 100; i++) {
    t = i * 10; // every 10 ms for a second
    uppy.emit('upload-progress', a, { bytesUploaded: i, bytesTotal: 100 });
    uppy.emit('upload-progress', b, { bytesUploaded: i, bytesTotal: 200 });
  }
  uppy.emit('upload-success', a, {});
  const progress = (f) => uppy.seen.filter(([e, file]) => e === 'upload-progress' && file === f).map(([, , p]) => p.bytesUploaded);
  // a: at 10 ms, 510 ms, and its last (100 of 100); b: at 10, 510 ms.
  assert.deepEqual(progress(a), [1, 51, 100]);
  assert.deepEqual(progress(b), [1, 51]);
  assert.equal(uppy.seen.at(-1)[0], 'upload-success');
  assert.equal(uppy.seen.length, 6);
});
