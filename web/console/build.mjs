// Builds the console into ../../internal/console/dist: one JS and one CSS
// bundle with content hashes, index.html naming them, and a .gz and a .br
// of each file for the Go handler to send precompressed. Run it through
// scripts/build-console.sh (npm ci first).
import * as esbuild from 'esbuild';
import { readFileSync, writeFileSync, rmSync, mkdirSync, readdirSync } from 'node:fs';
import { gzipSync, brotliCompressSync, constants } from 'node:zlib';
import { basename, join } from 'node:path';

const out = new URL('../../internal/console/dist/', import.meta.url).pathname;
rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, 'assets'), { recursive: true });

const result = await esbuild.build({
  entryPoints: ['src/main.js'],
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['chrome110', 'firefox110', 'safari16'],
  outdir: join(out, 'assets'),
  entryNames: '[name]-[hash]',
  chunkNames: 'chunk-[hash]',
  splitting: true, // markdown.js (marked, DOMPurify) loads on first use
  assetNames: '[name]-[hash]',
  legalComments: 'linked',
  metafile: true,
  loader: { '.svg': 'file', '.png': 'file' },
  // Uppy's byte formatter writes "MB" for 1024² bytes: the console's own
  // (src/bytes.js) writes MiB, as the file list does.
  alias: { '@transloadit/prettier-bytes': './src/bytes.js' },
  define: { 'process.env.NODE_ENV': '"production"' },
  logLevel: 'warning',
});

// index.html names the entry's script and stylesheet; chunks are loaded
// by the script when needed.
const entry = Object.entries(result.metafile.outputs).find(([, o]) => o.entryPoint === 'src/main.js');
const js = basename(entry[0]);
const css = basename(entry[1].cssBundle);
writeFileSync(join(out, 'index.html'), readFileSync('index.html', 'utf8').replace('{{JS}}', js).replace('{{CSS}}', css));

// The first load is index.html, the entry's script and stylesheet and
// the chunks it imports statically (esbuild's shared helpers): the sizes
// printed are of those, the other chunks counted apart.
const first = new Set(['index.html', js, css, ...entry[1].imports.filter((i) => i.kind === 'import-statement').map((i) => basename(i.path))]);
let raw = 0;
let gz = 0;
let br = 0;
let lazy = 0;
const compress = (dir) => {
  for (const f of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, f.name);
    if (f.isDirectory()) {
      compress(p);
      continue;
    }
    const data = readFileSync(p);
    const g = gzipSync(data, { level: 9 });
    const b = brotliCompressSync(data, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } });
    writeFileSync(p + '.gz', g);
    writeFileSync(p + '.br', b);
    if (!first.has(f.name)) {
      if (f.name.endsWith('.js')) lazy += b.length;
    } else {
      raw += data.length;
      gz += g.length;
      br += b.length;
    }
  }
};
compress(out);
console.log(
  `console: ${js}, ${css}; first load ${(raw / 1024).toFixed(1)} KiB raw, ${(gz / 1024).toFixed(1)} KiB gzip, ${(br / 1024).toFixed(1)} KiB brotli; ` +
    `chunks loaded on demand ${(lazy / 1024).toFixed(1)} KiB brotli`,
);
