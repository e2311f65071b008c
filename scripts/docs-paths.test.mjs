// The docs name the code as it is: every repository path a document puts in backticks
// (`src/...`, `tests/...`, or one under `src/server/` written from `domain/`, `services/`,
// `store/`...) exists. A file moved without its docs fails here, naming the line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const PATH = /`((?:src|server|domain|services|store|api|model|ui|harness|tests|scripts|end2end|deploy)\/[A-Za-z0-9_./-]+)`/g;

function docs() {
  return [
    'README.md',
    ...readdirSync(join(root, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => join('docs', f)),
  ];
}

export function missing(text, file) {
  const out = [];
  text.split('\n').forEach((line, i) => {
    for (const m of line.matchAll(PATH)) {
      const p = m[1].replace(/\/$/, '');
      const found = [p, join('src', p), join('src/server', p)].some((c) => existsSync(join(root, c)));
      if (!found) out.push(`${file}:${i + 1}: ${p}`);
    }
  });
  return out;
}

test('every path the docs name exists', () => {
  const files = docs();
  assert.ok(files.length > 5, 'the docs were found');
  let named = 0;
  const gone = [];
  for (const f of files) {
    const text = readFileSync(join(root, f), 'utf8');
    named += [...text.matchAll(PATH)].length;
    gone.push(...missing(text, f));
  }
  assert.ok(named > 100, `the docs name ${named} paths: the pattern still finds them`);
  assert.deepEqual(gone, [], 'paths the docs name that do not exist');
});

test('a path that does not exist is reported with its line', () => {
  assert.deepEqual(missing('x\nsee `src/server/services/events/rules.rs` here', 'd.md'), [
    'd.md:2: src/server/services/events/rules.rs',
  ]);
});
