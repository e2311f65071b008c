// The split-loader patch against the copy of cargo-leptos 0.3.10's loader it was written
// for (scripts/fixtures): it applies, the patched loader loads a route from its bundle, and
// a loader of another shape fails saying which lines changed. Run: node --test scripts/
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { checkShape, FIXTURE, MARK, pack, patchLoader, PatchError, ranges, ROUTES_FILE, routeTable } from './bundle-wasm.mjs';

const loader = fs.readFileSync(FIXTURE, 'utf8');
const manifest = JSON.parse(fs.readFileSync(path.join(path.dirname(FIXTURE), 'wasm-split-manifest.json'), 'utf8'));
const AUDIT = Object.keys(manifest).find((r) => r.startsWith('__audit'));
const LOGIN = Object.keys(manifest).find((r) => r.startsWith('__login'));

test('a loader that changed fails the build and says which lines', () => {
  const changed = loader.replace('            await callee();', '            await callee(callbackData);');
  assert.throws(() => checkShape(changed), (e) => {
    assert.ok(e instanceof PatchError);
    assert.match(e.message, /lines no longer there:\n {4} {12}await callee\(\);/);
    assert.match(e.message, /lines that are new:\n {4} {12}await callee\(callbackData\);/);
    return true;
  });
  // What every build names or orders its own way is not a change: the routes a piece
  // serves, the shared imports.
  checkShape(loader.replace('/* __audit', '/* __other, __audit'));
  checkShape(loader.replaceAll('{ __wasm_split_shared0, memory, __indirect_function_table,  }', '{ memory, __wasm_split_shared0, __wasm_split_shared1, __indirect_function_table,  }'));
});

test('ranges say a route\'s chunks briefly', () => {
  assert.equal(ranges([17, 18, 19, 40]), '17-19,40');
  assert.equal(ranges([5]), '5');
});

test('the patched loader takes a first load\'s pieces from the route\'s bundle, in one download; a later route reads the routes\' list first', async () => {
  const patched = patchLoader(loader, manifest);
  assert.ok(patched.startsWith(MARK));
  assert.ok(!patched.includes('"17-18"'), 'no list of the routes\' pieces in the loader');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bundle-wasm-'));
  fs.writeFileSync(path.join(dir, 'loader.mjs'), patched);
  const callbacks = [];
  globalThis.__calls = callbacks;
  fs.writeFileSync(
    path.join(dir, 'ops-console.js'),
    'export function initSync() { return { __wasm_split_shared0: {}, memory: {}, __indirect_function_table: { get: (i) => (data, ok) => globalThis.__calls.push([i, data, ok]) } }; }\n',
  );
  const fetched = [];
  const instantiated = [];
  const realFetch = globalThis.fetch;
  const realInstantiate = WebAssembly.instantiate;
  // The audit route: chunk_17, chunk_18 and its own module; the login route: chunk_18 and
  // its own. Each bundle names its pieces.
  const files = {
    [`bundle_${AUDIT}.wasm`]: pack([['chunk_17', Buffer.from('c17')], ['chunk_18', Buffer.from('c18')], [`split_${AUDIT}`, Buffer.from('audit')]]),
    [`bundle_${LOGIN}.wasm`]: pack([['chunk_18', Buffer.from('c18')], [`split_${LOGIN}`, Buffer.from('login')]]),
    [ROUTES_FILE]: Buffer.from(JSON.stringify(routeTable(manifest))),
  };
  globalThis.fetch = async (url) => {
    const name = path.basename(new URL(url).pathname);
    fetched.push(name);
    return files[name] ? new Response(files[name]) : new Response('', { status: 404 });
  };
  WebAssembly.instantiate = async (bytes) => {
    instantiated.push(Buffer.from(bytes).toString());
    return { instance: { exports: {} } };
  };
  try {
    const mod = await import(pathToFileURL(path.join(dir, 'loader.mjs')).href);
    await mod[`__wasm_split_load_${AUDIT}`](7, 'data');
    assert.deepEqual(fetched, [`bundle_${AUDIT}.wasm`], 'a first load: its bundle alone');
    assert.deepEqual(instantiated.sort(), ['audit', 'c17', 'c18']);
    // A later route: the list says which of its pieces are missing (its own module, one
    // of two: half, so its bundle), and chunk_18 is not instantiated again.
    await mod[`__wasm_split_load_${LOGIN}`](8, 'more');
  } finally {
    globalThis.fetch = realFetch;
    WebAssembly.instantiate = realInstantiate;
  }
  assert.deepEqual(fetched, [`bundle_${AUDIT}.wasm`, ROUTES_FILE, `bundle_${LOGIN}.wasm`]);
  assert.deepEqual(instantiated.sort(), ['audit', 'c17', 'c18', 'login']);
  assert.deepEqual(callbacks, [[7, 'data', true], [8, 'more', true]]);
});
