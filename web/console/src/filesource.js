// tus-js-client's file reader for the console (no imports: node --test
// runs filesource.test.mjs).

/**
 * wholeFileReader is tus-js-client's `fileReader` option: as its own
 * browser reader for a File or Blob, except that a PATCH covering the
 * whole input sends the input itself, not input.slice(0, size). Chromium
 * streams a sliced Blob through its browser process (about 3 s of CPU a
 * GiB here) and lets the network service read a File directly (none):
 * the console's uploads are one PATCH (chunkSize Infinity), so every
 * upload that does not resume sends its File as is. A resumed upload
 * sends a slice from the server's offset, as before.
 */
export const wholeFileReader = {
  async openFile(input) {
    if (!input || typeof input.slice !== 'function' || typeof input.size !== 'number') {
      throw new Error('source object may only be an instance of File or Blob');
    }
    return {
      size: input.size,
      slice(start, end) {
        const done = end >= input.size;
        const value = start === 0 && done ? input : input.slice(start, end);
        return Promise.resolve({ value, done });
      },
      close() {},
    };
  },
};
