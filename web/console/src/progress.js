// Upload progress, throttled (no imports: node --test runs progress.test.mjs).

// PROGRESS_EVERY is how often (ms) a file's upload progress reaches
// Uppy's state. The browser reports it every few milliseconds; each report
// re-renders the dashboard and rewrites Golden Retriever's saved state,
// which cost the browser more CPU than sending the bytes (docs/PERFORMANCE.md,
// "Issue 23: uploads").
export const PROGRESS_EVERY = 500;

/**
 * throttleProgress lets through at most one 'upload-progress' event per
 * file every PROGRESS_EVERY ms, and always a file's last one (all bytes
 * sent), so the summary and the dashboard stay current.
 */
export function throttleProgress(uppy, every = PROGRESS_EVERY, now = () => performance.now()) {
  const emit = uppy.emit.bind(uppy);
  const last = new Map();
  uppy.emit = (event, ...args) => {
    if (event === 'upload-progress') {
      const [file, p] = args;
      const id = file && file.id;
      const t = now();
      const done = !p || p.bytesTotal == null || p.bytesUploaded >= p.bytesTotal;
      if (!done && last.has(id) && t - last.get(id) < every) return;
      last.set(id, t);
    }
    emit(event, ...args);
  };
}
