#!/usr/bin/env node
// One download per page instead of one per wasm piece (docs/page-weight.md, "Bundles").
//
// `cargo leptos build --split` cuts the client into a shell and, for every lazy route, its
// own module plus the shared chunks it needs: 18 to 143 files per page, each compressed
// alone and each with its own response headers. Compressed together they are about half
// the size, because the pieces repeat one another (imports, types, the same generated
// code). So, after the build, this script:
//
//   1. writes `bundle_<route>.wasm` for every route: the route's chunks and its own module,
//      one after the other (plus `.br` and `.gz` when the build precompressed). It is not
//      one wasm module but several; it is named `.wasm` because the server's preload links
//      are `<pkg>/<name>.wasm` for each name the manifest lists under a route, and the
//      manifest (step 3) now lists the bundle;
//   2. patches the loader (`__wasm_split*.js`): a route's first load fetches its bundle
//      when most of its pieces are not loaded yet (always on a page's first load), and
//      single pieces otherwise (a later navigation that shares most of them);
//   3. writes `first_<route>.wasm` for every route: the shell (`<output-name>.wasm`) and
//      then the route's bundle's pieces, the same way. A page's first load downloads this
//      one file (src/ui/hydration.rs starts it): one Brotli stream over the shell and the
//      page's code is about 10 KB smaller than the two apart. The loader takes the pieces
//      from it (`globalThis.__opsFirstLoad`);
//   4. rewrites the manifest (`__wasm_split_manifest.json`, read by the server to write a
//      page's preload links) so each route lists its first-load file: the browser starts
//      its download with the HTML, and the page's script reuses that download;
//   5. minifies the patched loader (esbuild): it is 150 KB of generated, repetitive code.
//
// The loader's shape is cargo-leptos 0.3.10's (wasm-split); any pattern not found, or
// found a different number of times than expected, fails the build instead of shipping a
// half-patched loader. Running it twice is harmless: a patched loader is left as it is.
//
// Usage: node scripts/bundle-wasm.mjs [target/site/pkg]

import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { transformSync } from 'esbuild';

const dir = process.argv[2] ?? 'target/site/pkg';
const fail = (msg) => {
  console.error(`bundle-wasm: ${msg}`);
  process.exit(1);
};

const loaderName = fs.readdirSync(dir).find((f) => /^__wasm_split\..*\.js$/.test(f));
if (!loaderName) fail(`no __wasm_split loader in ${dir}: was the build run with --split?`);
const loaderPath = path.join(dir, loaderName);
let loader = fs.readFileSync(loaderPath, 'utf8');
const MARK = '/* bundled by scripts/bundle-wasm.mjs */';
const manifestPath = path.join(dir, '__wasm_split_manifest.json');
const manifest = JSON.parse(fs.readFileSync(manifestPath, 'utf8'));
const precompressed = fs.existsSync(`${loaderPath}.br`);
const bundled = (listed) => listed.length === 1 && listed[0].startsWith('first_');
if (loader.startsWith(MARK)) {
  // Patched already; a run stopped before its last step may have left the manifest, or
  // files whose compressed copies are missing or older than they are (the server would
  // send those: an unpatched loader, say).
  for (const route of Object.keys(manifest)) {
    for (const file of [`bundle_${route}.wasm`, `first_${route}.wasm`].map((f) => path.join(dir, f))) {
      if (!fs.existsSync(file)) fail(`${file} is missing: rebuild (cargo leptos build --split)`);
      if (stale(file)) compress(file);
    }
  }
  if (!Object.values(manifest).every(bundled)) writeManifest();
  for (const file of [loaderPath, manifestPath]) if (stale(file)) compress(file);
  console.log('bundle-wasm: loader already patched');
  process.exit(0);
}
if (Object.values(manifest).some(bundled)) {
  fail('the manifest lists bundles but the loader is not patched: rebuild (cargo leptos build --split)');
}

/** True when the build precompressed and `file`'s copies are missing or older than it. */
function stale(file) {
  if (!precompressed) return false;
  const modified = fs.statSync(file).mtimeMs;
  return ['br', 'gz'].some((ext) => !fs.existsSync(`${file}.${ext}`) || fs.statSync(`${file}.${ext}`).mtimeMs < modified);
}

function compress(file) {
  const data = fs.readFileSync(file);
  const br = zlib.brotliCompressSync(data, {
    params: {
      [zlib.constants.BROTLI_PARAM_QUALITY]: 11,
      [zlib.constants.BROTLI_PARAM_LGWIN]: 24,
      [zlib.constants.BROTLI_PARAM_SIZE_HINT]: data.length,
    },
  });
  fs.writeFileSync(`${file}.br`, br);
  fs.writeFileSync(`${file}.gz`, zlib.gzipSync(data, { level: 9 }));
}

// The shell: the one module that is neither a piece nor a bundle.
const shells = fs
  .readdirSync(dir)
  .filter((f) => f.endsWith('.wasm') && !/^(chunk|split|bundle|first)_/.test(f));
if (shells.length !== 1) fail(`expected one shell wasm in ${dir}, found: ${shells.join(', ') || 'none'}`);
const shell = fs.readFileSync(path.join(dir, shells[0]));

/** A little-endian u32 count, a u32 length per part, then the parts. */
function pack(parts) {
  const header = Buffer.alloc(4 * (parts.length + 1));
  header.writeUInt32LE(parts.length, 0);
  parts.forEach((bytes, i) => header.writeUInt32LE(bytes.length, 4 * (i + 1)));
  return Buffer.concat([header, ...parts]);
}

function write(file, bytes) {
  fs.writeFileSync(file, bytes);
  if (precompressed) compress(file);
}

// 1. The bundles, in the manifest's order with the route's own module last; 3. the first-load
// files, the shell and then the same pieces.
const bundles = {};
for (const [route, listed] of Object.entries(manifest)) {
  // The manifest lists a route's chunks and its own module.
  const chunks = listed.filter((c) => c !== `split_${route}`);
  const numbers = chunks.map((c) => {
    const m = /^chunk_(\d+)$/.exec(c);
    if (!m) fail(`unexpected piece name ${c}`);
    return Number(m[1]);
  });
  const pieces = [...chunks, `split_${route}`].map((piece) => {
    const file = path.join(dir, `${piece}.wasm`);
    if (!fs.existsSync(file)) fail(`${file} is in the manifest but not on disk`);
    return fs.readFileSync(file);
  });
  write(path.join(dir, `bundle_${route}.wasm`), pack(pieces));
  write(path.join(dir, `first_${route}.wasm`), pack([shell, ...pieces]));
  bundles[route] = ranges(numbers);
}

/** `[17, 18, 19, 40]` as `"17-19,40"`: the loader carries every route's list. */
function ranges(numbers) {
  const out = [];
  for (let i = 0; i < numbers.length; ) {
    let j = i;
    while (j + 1 < numbers.length && numbers[j + 1] === numbers[j] + 1) j += 1;
    out.push(i === j ? `${numbers[i]}` : `${numbers[i]}-${numbers[j]}`);
    i = j + 1;
  }
  return out.join(',');
}

// 2. The loader.
function replaceAll(pattern, replacement, expected, what) {
  let count = 0;
  loader = loader.replace(pattern, (...args) => {
    count += 1;
    return typeof replacement === 'function' ? replacement(...args) : replacement;
  });
  if (count !== expected) fail(`${what}: expected ${expected}, found ${count}`);
}

const pieceCount = new Set([
  ...Object.values(manifest).flat(),
  ...Object.keys(manifest).map((route) => `split_${route}`),
]).size;
// Every piece's fetcher reads its bytes through `wasmBytes` (a bundle's slice or its own file).
replaceAll(
  // (A debug build wraps the instantiation in `debugWrap(…)`.)
  /const src = fetch\(new URL\("\.\/((?:chunk|split)_\w+)\.wasm", import\.meta\.url\)\);\n(\s*)return async \(imports\) => (\(|debugWrap\()WebAssembly\.instantiateStreaming\(src, imports\)\);/g,
  (_m, piece, indent, open) =>
    `const src = wasmBytes("${piece}");\n${indent}return async (imports) => ${open}instantiate("${piece}", src, imports));`,
  pieceCount,
  'piece fetchers',
);
// Every route's entry point names its bundle.
replaceAll(
  /export const __wasm_split_load_(\w+) = wrapAsyncCb\(makeLoad\(/g,
  (_m, route) => {
    if (!bundles[route]) fail(`route ${route} is not in the manifest`);
    return `export const __wasm_split_load_${route} = wrapAsyncCb("${route}", makeLoad(`;
  },
  Object.keys(bundles).length,
  'route entry points',
);
replaceAll(
  'function wrapAsyncCb(callee) {\n    return async (callbackIndex, callbackData) => {\n        let success;\n        try {\n            await callee();',
  'function wrapAsyncCb(route, callee) {\n    return async (callbackIndex, callbackData) => {\n        let success;\n        try {\n            startBundle(route);\n            await callee();',
  1,
  'wrapAsyncCb',
);

const runtime = `${MARK}
const BUNDLES = ${JSON.stringify(bundles)};
// A piece's bytes, once asked for: from a bundle under way or its own file. A failed
// download is forgotten, so the next attempt starts afresh.
const pieces = new Map();
function remember(name, bytes) {
    pieces.set(name, bytes);
    bytes.catch(() => { if (pieces.get(name) === bytes) pieces.delete(name); });
    return bytes;
}
function download(file) {
    return fetch(new URL("./" + file, import.meta.url)).then((r) => {
        if (!r.ok) throw new Error(file + ": HTTP " + r.status);
        return r.arrayBuffer();
    });
}
function wasmBytes(name) {
    return pieces.get(name) ?? remember(name, download(name + ".wasm"));
}
// Bytes that do not instantiate (a bundle from another deployment) are forgotten too.
async function instantiate(name, bytes, imports) {
    try {
        return await WebAssembly.instantiate(await bytes, imports);
    } catch (e) {
        if (pieces.get(name) === bytes) pieces.delete(name);
        throw e;
    }
}
// A route's pieces, in its bundle's order.
function routePieces(route) {
    const names = (BUNDLES[route] ? BUNDLES[route].split(",") : []).flatMap((r) => {
        const [a, b = a] = r.split("-").map(Number);
        return Array.from({ length: b - a + 1 }, (_, i) => "chunk_" + (a + i));
    });
    names.push("split_" + route);
    return names;
}
// The first load's pieces, from the file the page's script downloaded with the shell
// (src/ui/hydration.rs): \`pieces\` resolves to them, in the route's bundle's order.
const FIRST = globalThis.__opsFirstLoad;
if (FIRST && Object.hasOwn(BUNDLES, FIRST.route)) {
    const names = routePieces(FIRST.route);
    names.forEach((name, i) => remember(name, FIRST.pieces.then((list) => {
        if (list.length !== names.length) throw new Error(FIRST.route + ": first-load file does not match the loader");
        return list[i];
    })));
}
// Before a route loads: its bundle when most of its pieces are still missing.
function startBundle(route) {
    const names = routePieces(route);
    const missing = names.filter((name) => !pieces.has(name));
    if (missing.length * 2 < names.length) return;
    const all = download("bundle_" + route + ".wasm").then((b) => {
        const view = new DataView(b);
        if (view.getUint32(0, true) !== names.length) throw new Error(route + ": bundle does not match the loader");
        const slices = new Map();
        let offset = 4 * (names.length + 1);
        names.forEach((name, i) => {
            const length = view.getUint32(4 * (i + 1), true);
            slices.set(name, b.slice(offset, offset + length));
            offset += length;
        });
        if (offset !== b.byteLength) throw new Error(route + ": bundle does not match the loader");
        return slices;
    });
    for (const name of missing) remember(name, all.then((slices) => slices.get(name)));
}
`;
// An ES module's imports may follow other statements: they are hoisted.
loader = `${runtime}${loader}`;
// 5. Minified; the mark stays first, for a second run to see.
loader = `${MARK}\n${transformSync(loader, { minify: true, format: 'esm', legalComments: 'none' }).code}`;
write(loaderPath, loader);

// 4. The manifest, once the loader is written.
writeManifest();

function writeManifest() {
  const rewritten = Object.fromEntries(Object.keys(manifest).map((route) => [route, [`first_${route}`]]));
  fs.writeFileSync(manifestPath, JSON.stringify(rewritten, null, 2));
  if (precompressed) compress(manifestPath);
}

const sizes = Object.entries(manifest).map(
  ([route, listed]) => listed.filter((c) => c !== `split_${route}`).length + 1,
);
console.log(
  `bundle-wasm: ${Object.keys(bundles).length} route bundles (${Math.min(...sizes)}–${Math.max(...sizes)} pieces each), loader patched`,
);
