// The shape of the sources: the modules of src/ import each other without
// a cycle, and the Web entry (index.js, the "browser" and "default"
// export conditions) reaches no node: module, statically or on demand.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

import { jsRoot } from './server.js';

const src = join(jsRoot, 'src');

// imports maps each module of src/ to what it imports: the static imports
// and exports-from, and the dynamic import()s with a literal name.
function imports() {
  const graph = new Map();
  for (const f of readdirSync(src).filter((f) => f.endsWith('.js'))) {
    const text = readFileSync(join(src, f), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
    const deps = [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|^import\s+)['"]([^'"]+)['"]/gm)].map((m) => m[1]);
    graph.set(f, deps.map((d) => (d.startsWith('./') ? d.slice(2) : d)));
  }
  return graph;
}

test('the modules of src/ import each other without a cycle', () => {
  const graph = imports();
  assert.ok(graph.size >= 8, `modules: ${[...graph.keys()]}`);
  const state = new Map(); // 1: on the path, 2: done
  const visit = (f, path) => {
    if (state.get(f) === 2 || !graph.has(f)) return;
    assert.notEqual(state.get(f), 1, `import cycle: ${[...path, f].join(' → ')}`);
    state.set(f, 1);
    for (const d of graph.get(f)) visit(d, [...path, f]);
    state.set(f, 2);
  };
  for (const f of graph.keys()) visit(f, []);
});

test('the Web entry reaches no node: module; the Node entry does', () => {
  const graph = imports();
  const reach = (entry) => {
    const seen = new Set();
    const walk = (f) => {
      if (seen.has(f)) return;
      seen.add(f);
      for (const d of graph.get(f) ?? []) walk(d);
    };
    walk(entry);
    return [...seen];
  };
  assert.deepEqual(reach('index.js').filter((m) => m.startsWith('node:')), []);
  assert.ok(reach('node.js').includes('node:http'));
});
