// The pages of the console that need no data to exist, shared by a11y.spec.ts and
// screenshots.spec.ts. (Detail pages, such as /conversations/view, need demo data the
// e2e server does not load.)

export type ConsolePage = {
  /** A file-name-safe name: `overview`, `kill-switches`, `not-found`… */
  name: string;
  path: string;
  /** Visited as an admin; otherwise signed out, in the test's fresh context. */
  signedIn: boolean;
};

/** `/` → `overview`, `/kill-switches` → `kill-switches`. */
export function pageName(path: string): string {
  const name = path.replace(/[?#].*$/, '').replace(/^\/+|\/+$/g, '').replace(/[^a-zA-Z0-9]+/g, '-');
  return name || 'overview';
}

const signedIn = ['/', '/kill-switches', '/kill-switches/automation', '/kill-switches/approvals', '/events', '/outbox', '/outbox/receiver', '/conversations', '/audit', '/inbox', '/inbox/settings', '/idempotency', '/measurements', '/users', '/api-keys', '/api'];

export const consolePages: ConsolePage[] = [
  ...signedIn.map((path) => ({ name: pageName(path), path, signedIn: true })),
  { name: 'login', path: '/login', signedIn: false },
  { name: 'not-found', path: '/no-such-page', signedIn: true },
];
