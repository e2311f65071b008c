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
//      one wasm module but several, each prefixed by its length;
//   2. patches the split loader (`__wasm_split*.js`): a route's load fetches its bundle
//      when most of its pieces are not loaded yet (always on a page's first load), and
//      single pieces otherwise (a later navigation that shares most of them);
//   3. rewrites the split manifest (`__wasm_split_manifest.json`) so each route lists its
//      bundle: Leptos's `HydrationScripts` reads it and preloads a page's bundle with the
//      HTML, and the loader's fetch of the same file reuses that download;
//   4. minifies the patched loader (esbuild): it is 150 KB of generated, repetitive code.
//
// The loader is cargo-leptos 0.3.10's (wasm-split). Before patching, its shape is compared
// with the copy the patch was written for (scripts/fixtures/wasm-split-loader.js): a
// cargo-leptos that generates anything else fails the build and says which lines changed,
// instead of shipping a half-patched loader. `node --test scripts/` patches that copy and
// runs it (scripts/bundle-wasm.test.mjs). Running this twice is harmless: a patched loader
// is left as it is.
//
// Usage: node scripts/bundle-wasm.mjs [target/site/pkg]

import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { transformSync } from 'esbuild';

export const MARK = '/* bundled by scripts/bundle-wasm.mjs */';
const here = path.dirname(fileURLToPath(import.meta.url));
export const FIXTURE = path.join(here, 'fixtures', 'wasm-split-loader.js');

export class PatchError extends Error {}
const fail = (msg) => {
  throw new PatchError(msg);
};

/**
 * A bundle: a little-endian u32 count, a u32 length of the names, the parts' names (JSON,
 * in order), a u32 length per part, then the parts. It names its pieces, so the loader
 * needs no list of them for a first load.
 */
export function pack(named) {
  const names = Buffer.from(JSON.stringify(named.map(([name]) => name)));
  const header = Buffer.alloc(8);
  header.writeUInt32LE(named.length, 0);
  header.writeUInt32LE(names.length, 4);
  const lengths = Buffer.alloc(4 * named.length);
  named.forEach(([, bytes], i) => lengths.writeUInt32LE(bytes.length, 4 * i));
  return Buffer.concat([header, names, lengths, ...named.map(([, bytes]) => bytes)]);
}

/** Where each route's pieces are listed for a later navigation (step 2). */
export const ROUTES_FILE = 'bundle_routes.json';

/** `[17, 18, 19, 40]` as `"17-19,40"`: the loader carries every route's list. */
export function ranges(numbers) {
  const out = [];
  for (let i = 0; i < numbers.length; ) {
    let j = i;
    while (j + 1 < numbers.length && numbers[j + 1] === numbers[j] + 1) j += 1;
    out.push(i === j ? `${numbers[i]}` : `${numbers[i]}-${numbers[j]}`);
    i = j + 1;
  }
  return out.join(',');
}

/** A route's pieces, as the manifest lists them: its chunks (by number) and its module. */
export function routePieces(manifest) {
  return Object.fromEntries(
    Object.entries(manifest).map(([route, listed]) => {
      const chunks = listed.filter((c) => c !== `split_${route}`);
      const numbers = chunks.map((c) => {
        const m = /^chunk_(\d+)$/.exec(c);
        if (!m) fail(`unexpected piece name ${c} under ${route}`);
        return Number(m[1]);
      });
      return [route, { chunks, numbers, pieces: [...chunks, `split_${route}`] }];
    }),
  );
}

/**
 * A loader's lines with what differs from build to build made generic (piece and route
 * names, dependency lists, shared imports, comments), each line once, in order: what the
 * patch relies on.
 */
export function shape(loader) {
  const seen = new Set();
  for (const raw of loader.split('\n')) {
    const line = raw
      .replace(/^\/\* .* \*\/$/, '/* routes */')
      // The shared imports, named and ordered differently by each build.
      .replace(/\{ (?:\w+, )+ *\}/g, '{ SHARED }')
      .replace(/chunk_\d+/g, 'chunk_N')
      .replace(/(__wasm_split_load_|split_)\w+/g, '$1ROUTE')
      .replace(/, \[[^\]]*\]/g, ', [DEPS]');
    seen.add(line);
  }
  return [...seen];
}

/** Fails, naming the lines that differ, unless `loader` has the fixture's shape. */
export function checkShape(loader, fixture = fs.readFileSync(FIXTURE, 'utf8')) {
  const want = shape(fixture);
  const got = shape(loader);
  const gone = want.filter((l) => !got.includes(l));
  const added = got.filter((l) => !want.includes(l));
  if (gone.length || added.length) {
    const show = (lines) => lines.slice(0, 8).map((l) => `    ${l}`).join('\n');
    fail(
      `the split loader is not the one this patch was written for (${path.relative(process.cwd(), FIXTURE)}, cargo-leptos 0.3.10):\n` +
        (gone.length ? `  lines no longer there:\n${show(gone)}\n` : '') +
        (added.length ? `  lines that are new:\n${show(added)}\n` : '') +
        '  Read the new loader, adapt the patch and save the new copy as the fixture.',
    );
  }
}

/** The loader, patched to take each route's pieces from its bundle (step 2). */
export function patchLoader(loader, manifest) {
  checkShape(loader);
  const routes = routePieces(manifest);
  const bundles = routeTable(manifest);
  const replaceAll = (pattern, replacement, expected, what) => {
    let count = 0;
    loader = loader.replace(pattern, (...args) => {
      count += 1;
      return typeof replacement === 'function' ? replacement(...args) : replacement;
    });
    if (count !== expected) fail(`${what}: expected ${expected}, found ${count}`);
  };
  const pieceCount = new Set(Object.values(routes).flatMap((r) => r.pieces)).size;
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
  // An ES module's imports may follow other statements: they are hoisted.
  const patched = `${runtime()}${loader}`;
  // Minified; the mark stays first, for a second run to see.
  return `${MARK}\n${transformSync(patched, { minify: true, format: 'esm', legalComments: 'none' }).code}`;
}

function runtime() {
  return `${MARK}
// A piece's bytes, once asked for: from the bundle of the route that asked, or its own
// file. A failed download is forgotten, so the next attempt starts afresh.
const pieces = new Map();
// How the route loading now takes its pieces: a promise of its bundle's slices, or of
// nothing (each piece its own file).
let ready = Promise.resolve(undefined);
let routes;
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
    return pieces.get(name) ?? remember(name, ready.then((slices) => slices?.get(name) ?? download(name + ".wasm")));
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
// Each route's pieces, read when a route loads after another (a first load takes its
// bundle, which names its pieces).
function routePieces(route) {
    routes ??= download("${ROUTES_FILE}").then((b) => JSON.parse(new TextDecoder().decode(b)));
    routes.catch(() => { routes = undefined; });
    return routes.then((table) => {
        const names = (table[route] ? table[route].split(",") : []).flatMap((r) => {
            const [a, b = a] = r.split("-").map(Number);
            return Array.from({ length: b - a + 1 }, (_, i) => "chunk_" + (a + i));
        });
        names.push("split_" + route);
        return names;
    });
}
// A route's bundle: its pieces by name.
function takeBundle(route) {
    return download("bundle_" + route + ".wasm").then((b) => {
        const view = new DataView(b);
        const count = view.getUint32(0, true);
        const size = view.getUint32(4, true);
        const names = JSON.parse(new TextDecoder().decode(new Uint8Array(b, 8, size)));
        if (!Array.isArray(names) || names.length !== count) throw new Error(route + ": not a bundle");
        const slices = new Map();
        let offset = 8 + size + 4 * count;
        names.forEach((name, i) => {
            const length = view.getUint32(8 + size + 4 * i, true);
            slices.set(name, b.slice(offset, offset + length));
            offset += length;
        });
        if (offset !== b.byteLength) throw new Error(route + ": its pieces do not add up to the bundle");
        return slices;
    });
}
// Before a route loads: its bundle on a first load, or when most of its pieces are still
// missing; else each missing piece on its own.
function startBundle(route) {
    // What was there before this route asked for anything (its own asks follow at once).
    const had = new Set(pieces.keys());
    const bundle = had.size === 0
        ? Promise.resolve(true)
        : routePieces(route).then((names) => names.filter((n) => !had.has(n)).length * 2 >= names.length);
    ready = bundle.then((yes) => (yes ? takeBundle(route) : undefined));
}
`;
}

/** Each route's chunks as ranges (`ROUTES_FILE`), for a navigation's choice. */
export function routeTable(manifest) {
  return Object.fromEntries(Object.entries(routePieces(manifest)).map(([r, { numbers }]) => [r, ranges(numbers)]));
}

/** The manifest Leptos reads (step 3): each route's bundle. */
export function bundledManifest(manifest) {
  return Object.fromEntries(Object.keys(manifest).map((route) => [route, [`bundle_${route}`]]));
}

const bundled = (listed) => listed.length === 1 && listed[0].startsWith('bundle_');

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

/** Bundles, patches and rewrites the site's `dir` in place. */
export function bundleSite(dir) {
  const loaderName = fs.readdirSync(dir).find((f) => /^__wasm_split\..*\.js$/.test(f));
  if (!loaderName) fail(`no __wasm_split loader in ${dir}: was the build run with --split?`);
  const loaderPath = path.join(dir, loaderName);
  const loader = fs.readFileSync(loaderPath, 'utf8');
  const manifestPath = path.join(dir, '__wasm_split_manifest.json');
  const manifest = JSON.parse(fs.readFileSync(manifestPath, 'utf8'));
  const precompressed = fs.existsSync(`${loaderPath}.br`);
  // True when the build precompressed and `file`'s copies are missing or older than it.
  const stale = (file) =>
    precompressed &&
    ['br', 'gz'].some((ext) => !fs.existsSync(`${file}.${ext}`) || fs.statSync(`${file}.${ext}`).mtimeMs < fs.statSync(file).mtimeMs);
  const write = (file, bytes) => {
    fs.writeFileSync(file, bytes);
    if (precompressed) compress(file);
  };
  if (loader.startsWith(MARK)) {
    // Patched already; a run stopped before its last step may have left the manifest, or
    // files whose compressed copies are missing or older than they are.
    for (const route of Object.keys(manifest)) {
      const file = path.join(dir, `bundle_${route}.wasm`);
      if (!fs.existsSync(file)) fail(`${file} is missing: rebuild (cargo leptos build --split)`);
      if (stale(file)) compress(file);
    }
    if (!Object.values(manifest).every(bundled)) write(manifestPath, JSON.stringify(bundledManifest(manifest), null, 2));
    const routesFile = path.join(dir, ROUTES_FILE);
    if (!fs.existsSync(routesFile)) fail(`${routesFile} is missing: rebuild (cargo leptos build --split)`);
    for (const file of [loaderPath, manifestPath, routesFile]) if (stale(file)) compress(file);
    return 'loader already patched';
  }
  if (Object.values(manifest).some(bundled)) {
    fail('the manifest lists bundles but the loader is not patched: rebuild (cargo leptos build --split)');
  }
  const routes = routePieces(manifest);
  for (const [route, { pieces }] of Object.entries(routes)) {
    const named = pieces.map((piece) => {
      const file = path.join(dir, `${piece}.wasm`);
      if (!fs.existsSync(file)) fail(`${file} is in the manifest but not on disk`);
      return [piece, fs.readFileSync(file)];
    });
    write(path.join(dir, `bundle_${route}.wasm`), pack(named));
  }
  write(path.join(dir, ROUTES_FILE), JSON.stringify(routeTable(manifest)));
  write(loaderPath, patchLoader(loader, manifest));
  // The manifest last, once the loader is written.
  write(manifestPath, JSON.stringify(bundledManifest(manifest), null, 2));
  const sizes = Object.values(routes).map((r) => r.pieces.length);
  return `${sizes.length} route bundles (${Math.min(...sizes)}–${Math.max(...sizes)} pieces each), loader patched`;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    console.log(`bundle-wasm: ${bundleSite(process.argv[2] ?? 'target/site/pkg')}`);
  } catch (e) {
    if (!(e instanceof PatchError)) throw e;
    console.error(`bundle-wasm: ${e.message}`);
    process.exit(1);
  }
}
