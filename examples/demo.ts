/**
 * What every example shares: proxy options (from the environment when FLAG_URL is set, else an
 * in-process demo flag server, so each example runs on its own) and a stand-in for the host's own
 * session store, from which the examples bind the evaluation context's userId.
 */
import { optionsFromEnv, type FeatureDefinition, type FlagProxyOptions } from 'flag-proxy';
import { createMemoryStorageProvider, createTestFlagServer } from 'flag-proxy/testing';

/** The client key browsers send in demo mode. Demo only. */
export const DEMO_CLIENT_KEY = 'demo-client-key-not-secret';
const DEMO_UPSTREAM_TOKEN = 'demo-upstream-token';

const on = { name: 'default', parameters: {}, constraints: [] };

/** Demo flags: one on for everyone, one for the users 1, 2 and 3, one for the region eu. */
export const DEMO_FLAGS = [
  { name: 'demo.welcome-banner', enabled: true, strategies: [on], variants: [] },
  { name: 'demo.beta-testers', enabled: true, strategies: [{ name: 'userWithId', parameters: { userIds: '1,2,3' }, constraints: [] }], variants: [] },
  {
    name: 'demo.eu-only',
    enabled: true,
    strategies: [{ ...on, constraints: [{ contextName: 'region', operator: 'IN', values: ['eu'], inverted: false }] }],
    variants: [],
  },
] as FeatureDefinition[];

/** Proxy options and how to stop what they point at. */
export interface ExampleFlags {
  options: FlagProxyOptions;
  /** True when the in-process demo flag server answers (no FLAG_URL). */
  demo: boolean;
  close(): Promise<void>;
}

/** Options from FLAG_URL, FLAG_API_TOKEN and FLAG_PROXY_CLIENT_KEYS, or a demo flag server when FLAG_URL is unset. */
export async function exampleFlags(env: NodeJS.ProcessEnv = process.env): Promise<ExampleFlags> {
  if (env.FLAG_URL) return { options: optionsFromEnv(env), demo: false, close: async () => undefined };
  const server = await createTestFlagServer({ features: DEMO_FLAGS, clientTokens: [DEMO_UPSTREAM_TOKEN] });
  return {
    options: { flagUrl: server.url, flagApiToken: DEMO_UPSTREAM_TOKEN, clientKeys: [DEMO_CLIENT_KEY], storageProvider: createMemoryStorageProvider() },
    demo: true,
    close: () => server.close(),
  };
}

/** A signed-in user of the host application. */
export interface SessionUser {
  id: string;
  name: string;
}

/** Stands in for a real session store: the `session` cookie names a signed-in user. */
const SESSIONS = new Map<string, SessionUser>([
  ['alice', { id: '1', name: 'Alice' }],
  ['bob', { id: '42', name: 'Bob' }],
]);

/** The user whose session the Cookie header carries, if any. */
export function sessionUser(cookieHeader: string | undefined | null): SessionUser | undefined {
  const session = /(?:^|;\s*)session=([^;]*)/.exec(cookieHeader ?? '')?.[1];
  return session === undefined ? undefined : SESSIONS.get(decodeURIComponent(session));
}

/** What the examples' own route answers. */
export function hello(user: SessionUser | undefined): { hello: string } {
  return { hello: user?.name ?? 'stranger' };
}

/** The line each server prints once it listens; the example tests read the port from it. */
export function listeningMessage(name: string, port: number, demo: boolean): string {
  const base = `http://localhost:${port}`;
  const key = demo ? ` -H 'Authorization: ${DEMO_CLIENT_KEY}'` : '';
  return [
    `${name} example listening on ${base}`,
    `  curl ${base}/api/hello`,
    `  curl${key} -H 'Cookie: session=bob' '${base}/api/flags/proxy?userId=1'   # userId is bound to the session: 42`,
    '',
  ].join('\n');
}
