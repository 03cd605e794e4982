// Sizes in binary units (KiB, MiB, …), the one notation of the console.
// build.mjs also makes this module stand in for Uppy's
// @transloadit/prettier-bytes, which counts in 1024s but writes "MB": the
// upload panel then speaks MiB like the file list.

export function formatBytes(n) {
  if (n === undefined || n === null) return '';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let i = 0;
  let v = Math.abs(n);
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${n < 0 ? '-' : ''}${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
}

/** prettierBytes is @transloadit/prettier-bytes' signature. */
export function prettierBytes(input) {
  if (typeof input !== 'number' || Number.isNaN(input)) throw new TypeError(`Expected a number, got ${typeof input}`);
  return formatBytes(input);
}
