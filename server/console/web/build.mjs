// Builds the console into a directory (npm run build: ../dist, which is
// committed and embedded by server/console): app.js, every module and
// uPlot bundled by esbuild; app.css, uPlot's styles and the console's;
// index.html as written. The output depends on the sources and the
// lockfile only (no time, no absolute path), so scripts/console-test.sh
// can build it again and compare.
//   node build.mjs OUTDIR

import { build } from 'esbuild';
import { mkdirSync, readFileSync, writeFileSync, copyFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const out = process.argv[2];
if (!out) {
  console.error('usage: node build.mjs OUTDIR');
  process.exit(2);
}
mkdirSync(out, { recursive: true });
await build({
  entryPoints: [join(here, 'src/main.js')],
  bundle: true,
  format: 'esm',
  target: 'es2022',
  minify: true,
  legalComments: 'eof',
  charset: 'utf8',
  absWorkingDir: here,
  outfile: join(out, 'app.js'),
  logLevel: 'warning',
});
const css = readFileSync(join(here, 'node_modules/uplot/dist/uPlot.min.css'), 'utf8') + '\n' + readFileSync(join(here, 'src/console.css'), 'utf8');
writeFileSync(join(out, 'app.css'), css);
copyFileSync(join(here, 'src/index.html'), join(out, 'index.html'));
