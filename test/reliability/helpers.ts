/**
 * Shared helpers of the reliability suite: log capture, waiting, strict JSON, prototype checks,
 * and a way to let a failing upstream settle before a proxy is closed.
 */
import http from 'node:http';
import type { FeatureDefinition, Logger } from 'flag-proxy';
import type { TestFlagServer } from 'flag-proxy/testing';
import { feature, type Harness } from '../support/harness.js';
import { silentLogger as silent } from 'flag-proxy/testing';

export { CLIENT_KEY, SERVER_TOKEN, eventually, feature, postJson, rawRequest, startHarness } from '../support/harness.js';
export type { Harness, RawResponse } from '../support/harness.js';

/** The flags both the fault and the known-bug tests start from: one on, one off, one for userId 7 alone. */
export const GOOD_FLAGS: FeatureDefinition[] = [
  feature('on-a'),
  feature('off-b', { enabled: false }),
  feature('user-7', { strategies: [{ name: 'userWithId', parameters: { userIds: '7' }, constraints: [] }] as never }),
];

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A logger that keeps every call, at every level, as one line per call. */
export interface CapturingLogger extends Logger {
  readonly lines: string[];
  text(): string;
}

function show(value: unknown): string {
  if (value instanceof Error) return `${value.name}: ${value.message}\n${value.stack ?? ''}`;
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

export function capturingLogger(): CapturingLogger {
  const lines: string[] = [];
  const at =
    (level: string) =>
    (message: string, ...args: unknown[]): void => {
      lines.push([`${level}: ${message}`, ...args.map(show)].join(' '));
    };
  return {
    lines,
    text: () => lines.join('\n'),
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    fatal: at('fatal'),
  };
}

export const silentLogger = (): Logger => silent;

/** Polls `check` every 10 ms until it returns true; resolves with the time it took, or throws. */
export async function waitUntil(check: () => boolean | Promise<boolean>, timeoutMs: number, what = 'condition'): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (await check()) return Date.now() - started;
    if (Date.now() - started > timeoutMs) throw new Error(`${what} not met within ${timeoutMs} ms`);
    await sleep(10);
  }
}

/** Parses JSON or throws an error that shows the text (a 200 with a broken body is a bug too). */
export function strictJson(text: string): any {
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`answer is not valid JSON: ${text.slice(0, 300)}`);
  }
}

/** Flag fetches the upstream received, oldest first. */
export const fetchesOf = (upstream: TestFlagServer) => upstream.requests.filter((r) => r.path === '/api/client/features');

/**
 * Clears the upstream's fault and waits until no failed flag fetch can still be retried: the last
 * fetch was answered 200/304 (or 401/403, after which polling stops) and none is in flight, so
 * no test depends on how a fetch failing after close() is handled (that is tested on its own:
 * BUG-2 in shutdown.test.ts).
 */
export async function settle(upstream: TestFlagServer, timeoutMs = 8000): Promise<void> {
  upstream.setFault(undefined);
  const safe = new Set([200, 304, 401, 403]);
  await waitUntil(
    () => {
      const last = fetchesOf(upstream).at(-1);
      return upstream.fetchConcurrency().current === 0 && (last === undefined || (last.status !== undefined && safe.has(last.status)));
    },
    timeoutMs,
    'the upstream to settle (no failed fetch left to retry)',
  );
}

/**
 * Waits until the upstream has seen no new request and none in flight over five turns of the
 * event loop 40 ms apart. Call after a proxy's close(): a fetch it had started (even one still
 * queued behind a busy event loop) is then answered before the upstream goes away, instead of
 * being cut and retried against a closed port (which crashed the process before BUG-2's fix).
 */
export async function quiet(upstream: TestFlagServer, timeoutMs = 5000): Promise<void> {
  upstream.setFault(undefined);
  const deadline = Date.now() + timeoutMs;
  let seen = upstream.requests.length;
  let calm = 0;
  while (calm < 5 && Date.now() < deadline) {
    await sleep(40);
    const now = upstream.requests.length;
    calm = now === seen && upstream.fetchConcurrency().current === 0 ? calm + 1 : 0;
    seen = now;
  }
}

/** Closes harnesses: settle the upstream, close the proxy, let the upstream go quiet, close the rest. */
export async function closeAll(harnesses: Harness[]): Promise<void> {
  for (const h of harnesses.splice(0)) {
    await settle(h.upstream).catch(() => undefined);
    await h.proxy.close();
    await quiet(h.upstream);
    await h.close();
  }
}

/** Own property names of the built-in prototypes, to prove nothing was added to them. */
export function prototypeFingerprint(): string {
  const protos: Array<[string, object]> = [
    ['Object', Object.prototype],
    ['Array', Array.prototype],
    ['Function', Function.prototype],
    ['String', String.prototype],
    ['Number', Number.prototype],
    ['Boolean', Boolean.prototype],
  ];
  return protos.map(([name, proto]) => `${name}:${Reflect.ownKeys(proto).map(String).sort().join(',')}`).join('|');
}

/** True when a plain object literal inherits nothing unexpected. */
export function objectLooksClean(): boolean {
  const probe: Record<string, unknown> = {};
  return (
    probe.polluted === undefined &&
    probe.userId === undefined &&
    probe.isAdmin === undefined &&
    Object.getPrototypeOf(probe) === Object.prototype &&
    typeof Object.prototype.toString === 'function' &&
    Object.prototype.toString.call([]) === '[object Array]'
  );
}

/** A [name, value] list as node:http headers: a repeated name is sent as repeated header lines. */
function headerObject(list: Array<[string, string]>): http.OutgoingHttpHeaders {
  const out: Record<string, string | string[]> = {};
  const spelled = new Map<string, string>();
  for (const [name, value] of list) {
    const key = spelled.get(name.toLowerCase()) ?? name;
    spelled.set(name.toLowerCase(), key);
    const previous = out[key];
    out[key] = previous === undefined ? value : [...(Array.isArray(previous) ? previous : [previous]), value];
  }
  return out;
}

/** One request over a fresh connection; never throws for an HTTP status, resolves the outcome. */
export interface Outcome {
  status?: number;
  headers?: http.IncomingHttpHeaders;
  body?: string;
  /** A connection-level failure (ECONNREFUSED, ECONNRESET, TIMEOUT, ...). */
  error?: string;
}

export function send(
  url: string,
  init: { method?: string; headers?: http.OutgoingHttpHeaders | Array<[string, string]>; body?: string | Buffer; agent?: http.Agent | false; timeoutMs?: number } = {},
): Promise<Outcome> {
  return new Promise((resolve) => {
    let req: http.ClientRequest;
    // The path is sent exactly as given: `new URL()` would resolve `..` and `.` segments.
    const split = /^(https?:\/\/[^/?#]+)(.*)$/.exec(url);
    const origin = new URL(split?.[1] ?? url);
    try {
      req = http.request({
        hostname: origin.hostname,
        port: origin.port,
        path: split?.[2] || '/',
        method: init.method ?? 'GET',
        headers: Array.isArray(init.headers) ? headerObject(init.headers) : init.headers,
        agent: init.agent ?? false,
        timeout: init.timeoutMs ?? 5000,
      });
    } catch (error) {
      resolve({ error: `CLIENT:${(error as Error).message}` });
      return;
    }
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', (e: NodeJS.ErrnoException) => resolve({ status: res.statusCode, headers: res.headers, error: e.code ?? e.message }));
    });
    req.on('timeout', () => req.destroy(Object.assign(new Error('TIMEOUT'), { code: 'TIMEOUT' })));
    req.on('error', (e: NodeJS.ErrnoException) => resolve({ error: e.code ?? e.message }));
    req.end(init.body);
  });
}

/** The value of one Prometheus sample, or undefined. */
export function metricValue(text: string, name: string): number | undefined {
  const match = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text);
  return match ? Number(match[1]) : undefined;
}

/** A frontend SDK's usage report. */
export function usageReport(toggles: Record<string, { yes: number; no: number; variants?: Record<string, number> }>) {
  const now = new Date().toISOString();
  return { appName: 'browser-app', instanceId: 'browser-1', environment: 'dev', bucket: { start: now, stop: now, toggles } };
}

/** One request of an SDK-style load: when it started and ended, and how it ended. */
export interface LoadOutcome {
  start: number;
  end: number;
  status?: number;
  error?: string;
  /** The `Connection` response header. */
  connection?: string;
}

/** Usage the load's clients were told was accepted (200), per toggle. */
export type Tally = Record<string, { yes: number; no: number }>;

/**
 * SDK-style clients, each with its own keep-alive connection (as browsers hold one), alternating
 * `POST /proxy` lookups by name (`on` counts yes, `off` counts no) and frontend usage reports.
 * A client stops after its first refused connection, or when `stop()` is called.
 */
export function sdkLoad(
  base: string,
  key: string,
  clients: number,
  { userId = 'slow', keepAlive = true, lookupsOnly = false }: { userId?: string; keepAlive?: boolean; lookupsOnly?: boolean } = {},
) {
  const outcomes: LoadOutcome[] = [];
  const tally: Tally = { on: { yes: 0, no: 0 }, off: { yes: 0, no: 0 } };
  let stopped = false;
  const agents: http.Agent[] = [];
  const one = async (i: number): Promise<void> => {
    const agent = new http.Agent({ keepAlive, maxSockets: 1 });
    agents.push(agent);
    for (let n = 0; !stopped; n += 1) {
      const lookup = lookupsOnly || (n + i) % 2 === 0;
      const body = lookup
        ? JSON.stringify({ context: { userId }, toggles: ['on', 'off'] })
        : JSON.stringify(usageReport({ on: { yes: 3, no: 1 }, off: { yes: 0, no: 2 } }));
      const start = Date.now();
      const res = await send(`${base}${lookup ? '/proxy' : '/proxy/client/metrics'}`, {
        method: 'POST',
        headers: { authorization: key, 'content-type': 'application/json' },
        body,
        agent,
      });
      outcomes.push({ start, end: Date.now(), status: res.status, error: res.error, connection: res.headers?.connection as string | undefined });
      if (res.status === 200) {
        if (lookup) {
          (tally.on as { yes: number }).yes += 1;
          (tally.off as { no: number }).no += 1;
        } else {
          (tally.on as { yes: number; no: number }).yes += 3;
          (tally.on as { yes: number; no: number }).no += 1;
          (tally.off as { no: number }).no += 2;
        }
      }
      if (res.error === 'ECONNREFUSED') return;
    }
  };
  const running = Promise.all(Array.from({ length: clients }, (_, i) => one(i)));
  return {
    outcomes,
    tally,
    /** Resolves when every client has stopped (refused, or told to stop). */
    done: running,
    async stop(): Promise<void> {
      stopped = true;
      await running;
      for (const agent of agents) agent.destroy();
    },
  };
}
