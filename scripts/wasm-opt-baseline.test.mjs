// scripts/wasm-opt-baseline.cjs keeps the wasm in node on its baseline tier, and npm's
// wasm-opt run so makes exactly the bytes it makes on node's default tiers. The Makefile's
// front builds load it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const preload = join(root, 'scripts/wasm-opt-baseline.cjs');
const wasmOpt = join(root, 'node_modules/binaryen/bin/wasm-opt');
const baseline = { ...process.env, NODE_OPTIONS: `--require ${preload}` };

// A module with work for -Oz: a constant sum, and a function nobody calls.
const wat = `(module
  (func $unused (result i32) (i32.const 7))
  (func (export "three") (result i32) (i32.add (i32.const 1) (i32.const 2))))`;

test('a hot wasm function stays on the baseline tier with the preload, and not without', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tier-'));
  const script = join(dir, 'tier.js');
  writeFileSync(
    script,
    `const bytes = new Uint8Array([0,97,115,109,1,0,0,0,1,5,1,96,0,1,127,3,2,1,0,7,9,1,5,116,104,114,101,101,0,0,10,6,1,4,0,65,3,11]);
const f = new WebAssembly.Instance(new WebAssembly.Module(bytes)).exports.three;
// Hot, until V8 tiers it up (in the background: on a busy machine it takes a while),
// or for 5 s.
const until = Date.now() + 5000;
do { for (let i = 0; i < 1e5; i++) f(); } while (%IsLiftoffFunction(f) && Date.now() < until);
console.log(%IsLiftoffFunction(f) ? 'baseline' : 'optimized');`,
  );
  const tier = (env) =>
    execFileSync('node', ['--allow-natives-syntax', script], { env }).toString().trim();
  assert.equal(tier(process.env), 'optimized');
  assert.equal(tier(baseline), 'baseline');
});

test("npm's wasm-opt makes the same bytes on the baseline tier", () => {
  const dir = mkdtempSync(join(tmpdir(), 'wasm-opt-'));
  const input = join(dir, 'in.wasm');
  writeFileSync(join(dir, 'in.wat'), wat);
  execFileSync('node', [wasmOpt, join(dir, 'in.wat'), '-o', input]);
  const args = ['-Oz', '--converge', '--strip-producers', input, '-o'];
  execFileSync('node', [wasmOpt, ...args, join(dir, 'baseline.wasm')], { env: baseline });
  execFileSync('node', [wasmOpt, ...args, join(dir, 'default.wasm')]);
  const out = readFileSync(join(dir, 'baseline.wasm'));
  assert.ok(out.length > 8 && out.length < readFileSync(input).length, 'wasm-opt did some work');
  assert.deepEqual(out, readFileSync(join(dir, 'default.wasm')));
});

test('every front build in the Makefile loads the preload', () => {
  const makefile = readFileSync(join(root, 'Makefile'), 'utf8');
  const bare = makefile
    .split('\n')
    .filter((l) => /^\t.*cargo leptos build/.test(l) && !l.includes('--server-only'));
  assert.deepEqual(bare, [], 'a front build without the preload');
  assert.ok(makefile.match(/\$\(FRONT_BUILD\)/g).length >= 2);
  assert.match(makefile, /FRONT_BUILD := NODE_OPTIONS="\$\$\{NODE_OPTIONS:-\} --require \$\(CURDIR\)\/scripts\/wasm-opt-baseline\.cjs" cargo leptos build/);
});
