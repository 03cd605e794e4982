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
  assetNames: '[name]-[hash]',
  legalComments: 'linked',
  metafile: true,
  loader: { '.svg': 'file', '.png': 'file' },
  define: { 'process.env.NODE_ENV': '"production"' },
  logLevel: 'warning',
});

const outputs = Object.keys(result.metafile.outputs).map((p) => basename(p));
const js = outputs.find((f) => f.endsWith('.js'));
const css = outputs.find((f) => f.endsWith('.css'));
writeFileSync(join(out, 'index.html'), readFileSync('index.html', 'utf8').replace('{{JS}}', js).replace('{{CSS}}', css));

let raw = 0;
let gz = 0;
let br = 0;
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
    if (!f.name.endsWith('.txt')) {
      raw += data.length;
      gz += g.length;
      br += b.length;
    }
  }
};
compress(out);
console.log(`console: ${js}, ${css}; ${(raw / 1024).toFixed(1)} KiB raw, ${(gz / 1024).toFixed(1)} KiB gzip, ${(br / 1024).toFixed(1)} KiB brotli`);
