// Loaded (NODE_OPTIONS=--require) into the wasm-opt that cargo-leptos runs on every piece
// of the split front: 400 and more, most under 1 KB. npm's binaryen is binaryen compiled
// to wasm, and node's optimizing tier recompiled all 11 MB of it at every start: 2.8 s a
// piece against 0.8 s on the baseline tier alone, which is as fast on the app's whole
// module. The passes are the same code, so the bytes are the same
// (scripts/wasm-opt-baseline.test.mjs). Only wasm's tiers change; JavaScript is untouched.
require('node:v8').setFlagsFromString('--liftoff-only');
