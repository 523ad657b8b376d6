/**
 * The load scenarios. Each one builds the autocannon requests for one run against one fresh target
 * process; every target gets the same sequence of contexts.
 */
import type autocannon from 'autocannon';
import type { TestFlagServer } from '../src/testing/index.js';
import { ADOPTION_USER, contextFor, queryFor, SCHEDULED_FLAG, scheduledFlag, UNKNOWN_TOGGLE, UNRELATED_FLAG, unrelatedFlag, type BenchContext } from './flags.js';
import type { ScenarioName } from './options.js';

/** What a scenario may change on the upstream for its windows. */
export type UpstreamFlags = Pick<TestFlagServer, 'upsertFeature'>;

export interface ScenarioInput {
  clientKey: string;
  /** The ten names of `post-named`. */
  namedToggles: string[];
  pollClients: number;
  /**
   * How many times each polling client asks before the warm-up. 1 gives every client its ETag;
   * several workers (each with its own answer cache, none sticky to a client) need more for each
   * worker to have seen nearly every client, as it would have in a long-running fleet. @default 1
   */
  primePasses?: number;
}

export interface ScenarioRun {
  requests: autocannon.Request[];
  /** Requests sent (unmeasured) before the warm-up, e.g. to give every polling client its ETag. */
  prime?: number;
  /** The longest priming may take, in seconds (a slower target is then polled by the clients it answered). */
  primeSeconds?: number;
  /** Called between warm-up and measurement; returns a note for the report, if any. */
  beforeMeasure?(): string | undefined;
}

export interface Scenario {
  name: ScenarioName;
  /** What it stands for, for the report. */
  description: string;
  /**
   * False when the scenario is measured at the first flag count only: its work does not depend on
   * the number of flags (preflight, health), or, for polling, the question is how its cost grows
   * with the number of clients rather than of flags.
   */
  perFlagCount: boolean;
  /** Flag counts above this skip the scenario (it would tell nothing a sibling does not, for minutes of run time). */
  maxFlags?: number;
  /** Statuses a correct target answers with. */
  expected: number[];
  /**
   * A toggle the upstream adds for this scenario's windows: the runner adds it (before priming, or
   * `afterPriming`, followed by one more unmeasured pass of the clients), waits until the target
   * lists it for a fixed context, runs the window, then removes it and waits for that too.
   */
  upstream?: { toggle: string; add(flags: UpstreamFlags): void; afterPriming?: boolean };
  create(input: ScenarioInput): ScenarioRun;
}

/** Origin of the pretend web app, for CORS. */
export const ORIGIN = 'https://app.example.com';

/** Headers the browser SDK (unleash-proxy-client) sends with each fetch. */
function sdkHeaders(clientKey: string): Record<string, string> {
  return {
    accept: 'application/json',
    authorization: clientKey,
    'unleash-sdk': 'unleash-client-js:3.8.2',
    'unleash-appname': 'web',
    'unleash-connection-id': '6f1c2f1e-8d2a-4c77-9a59-0c2b1f0e9d41',
    origin: ORIGIN,
  };
}

/** What a browser sends before each SDK poll (the fetch uses `cache: 'no-cache'`, so no preflight cache). */
export function preflightHeaders(): Record<string, string> {
  return {
    origin: ORIGIN,
    'access-control-request-method': 'GET',
    'access-control-request-headers': 'authorization,if-none-match,unleash-appname,unleash-connection-id,unleash-sdk',
  };
}

const headerValue = (headers: autocannon.Request['headers'], name: string): string | undefined => {
  for (const [key, value] of Object.entries(headers ?? {})) {
    if (key.toLowerCase() === name) return Array.isArray(value) ? value[0] : value;
  }
  return undefined;
};

/** Id ranges that never overlap between scenarios, so "unique" stays unique within one process. */
const UNIQUE_BASE: Partial<Record<ScenarioName, number>> = { 'get-unique': 10_000_000, 'get-gzip': 70_000_000, 'post-unique': 20_000_000, 'post-named': 30_000_000, 'ofrep-unique': 50_000_000, 'ofrep-single': 110_000_000 };
const POLL_BASE = 40_000_000;
/** OFREP polling clients: their own ids, so they never share an answer cache entry with `poll-etag`'s. */
const OFREP_POLL_BASE = 60_000_000;

/** Frontend SDKs polling by POST: their own ids too. */
const POST_POLL_BASE = 80_000_000;

/** `poll-scheduled`'s clients: their own ids, so that none was answered before the change was scheduled. */
const SCHEDULED_POLL_BASE = 90_000_000;
/** `poll-after-change`'s clients: their own ids too. */
const CHANGE_POLL_BASE = 100_000_000;

/**
 * Scenarios run against flag-proxy only: @unleash/proxy has no OFREP and never answers a POST 304,
 * and the bare server fakes neither; `poll-scheduled` and `poll-after-change` ask the same of the
 * predecessor as `poll-etag` (a full evaluation per poll) and of the bare server nothing new (a 304).
 */
export const FLAG_PROXY_ONLY: readonly ScenarioName[] = ['ofrep-unique', 'ofrep-single', 'ofrep-poll', 'post-poll', 'poll-scheduled', 'poll-after-change'];

/** Polling scenarios: one window, and one row (`<name>@<n>`), per polling population. */
export const POLLING: readonly ScenarioName[] = ['poll-etag', 'ofrep-poll', 'post-poll', 'poll-scheduled', 'poll-after-change'];

/** The frontend API Unleash Edge serves, where `post-poll`'s SDKs point. */
const FRONTEND_API = '/api/frontend';

/** The OFREP bulk path. */
export const OFREP_BULK = '/ofrep/v1/evaluate/flags';

/** Headers `@openfeature/ofrep-web-provider` sends with its bulk POST. */
function ofrepHeaders(clientKey: string): Record<string, string> {
  return { accept: 'application/json', 'content-type': 'application/json', authorization: `Bearer ${clientKey}`, origin: ORIGIN };
}

/** A bench context in OpenFeature's flat form: `targetingKey` (the user), the rest as top-level fields. */
export function ofrepBody(context: BenchContext): string {
  const { userId, properties, ...rest } = context;
  return JSON.stringify({ context: { targetingKey: userId, ...rest, ...properties } });
}
const HOT_IDS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];

/** Where `unleash-proxy-client` sends its usage reports, below its `/proxy` URL. */
export const CLIENT_METRICS = '/proxy/client/metrics';

/**
 * The `n`th usage report of a browser SDK (`unleash-proxy-client`, every 30 s): its 30 s bucket,
 * with yes/no counts (0–19, different from report to report) for each of `names`, a variant count
 * for every third, and the fields the SDK adds (`impactMetrics` since 3.8).
 */
export function metricsBody(names: readonly string[], n: number): string {
  const stop = Date.UTC(2026, 10, 29) + n * 1000;
  const toggles: Record<string, { yes: number; no: number; variants: Record<string, number> }> = {};
  names.forEach((name, i) => {
    const yes = (n * 7 + i * 3) % 20;
    const no = (n * 5 + i * 11) % 20;
    toggles[name] = { yes, no, variants: i % 3 === 0 ? { blue: yes } : {} };
  });
  return JSON.stringify({
    bucket: { start: new Date(stop - 30_000).toISOString(), stop: new Date(stop).toISOString(), toggles },
    appName: 'web',
    instanceId: 'browser',
    impactMetrics: [],
  });
}

function postBody(context: BenchContext, toggles?: string[]): string {
  return JSON.stringify(toggles ? { context, toggles } : { context });
}

/** SDKs polling `GET /proxy?<context>`, one client per id from `base` on, as `poll-etag`'s. */
function sdkPolls(base: number): Scenario['create'] {
  return ({ clientKey, pollClients, primePasses }) =>
    polling(
      'GET',
      sdkHeaders(clientKey),
      Array.from({ length: pollClients }, (_, i) => ({ path: `/proxy?${queryFor(contextFor(base + i))}`, etag: '' })),
      primePasses,
    );
}

/** `GET /proxy?<context>` with a context never asked before on every request (ids from `first` on). */
function uniqueGets(first: number, headers: Record<string, string>): ScenarioRun {
  let n = first;
  return {
    requests: [
      {
        method: 'GET',
        setupRequest(req) {
          req.path = `/proxy?${queryFor(contextFor(n++))}`;
          req.headers = headers;
          return req;
        },
      },
    ],
  };
}

/**
 * A POST on every request that `request(n)` makes from a number never used before (from `first`
 * on): its path and body, with `headers`. What get-unique's {@link uniqueGets} is for a body.
 */
function uniquePosts(first: number, headers: Record<string, string>, request: (n: number) => { path: string; body: string }): ScenarioRun {
  let n = first;
  return {
    requests: [
      {
        method: 'POST',
        setupRequest(req) {
          const { path, body } = request(n++);
          req.path = path;
          req.headers = { ...headers };
          req.body = body;
          return req;
        },
      },
    ],
  };
}

/** What one polling client sends: its path, and its body for a POST. */
interface PollingClient {
  path: string;
  body?: string;
  etag: string;
}

/**
 * A fixed population of polling clients taking turns, each repeating its own request with
 * `If-None-Match` of its last ETag; every client gets its ETag before the warm-up.
 */
function polling(method: 'GET' | 'POST', headers: Record<string, string>, clients: PollingClient[], primePasses: number | undefined): ScenarioRun {
  // The clients taking turns; narrowed before the measurement to those holding an ETag.
  let active = clients;
  let next = 0;
  return {
    // One request per client before the warm-up, so that every client polls with an ETag (more
    // passes when the target has several workers).
    prime: clients.length * (primePasses ?? 1),
    // Each first request is a full evaluation: about 2.5 ms for the slowest target at 200 flags.
    primeSeconds: Math.max(6, (clients.length * (primePasses ?? 1)) / 400),
    beforeMeasure() {
      const primed = clients.filter((c) => c.etag !== '');
      if (primed.length === clients.length || primed.length < 16) return primed.length < 16 ? `only ${primed.length} clients got an ETag` : undefined;
      // A target too slow to answer every client once within the priming time is polled by the
      // clients it did answer, so that the window measures polling and not first contact.
      active = primed;
      next = 0;
      return `${primed.length} of ${clients.length} clients polled`;
    },
    requests: [
      {
        method,
        setupRequest(req, context) {
          const client = active[next] as PollingClient;
          next = (next + 1) % active.length;
          (context as { client?: PollingClient }).client = client;
          req.path = client.path;
          req.headers = client.etag ? { ...headers, 'if-none-match': client.etag } : { ...headers };
          if (client.body !== undefined) req.body = client.body;
          return req;
        },
        onResponse(status, _body, context, responseHeaders) {
          const client = (context as { client?: PollingClient }).client;
          const etag = headerValue(responseHeaders, 'etag');
          if (client && status === 200 && etag) client.etag = etag;
        },
      },
    ],
  };
}

export const SCENARIOS: Scenario[] = [
  {
    name: 'get-unique',
    description: 'GET /proxy?<context>: a different user and session on every request (no cache can help)',
    perFlagCount: true,
    expected: [200],
    create: ({ clientKey }) => uniqueGets(UNIQUE_BASE['get-unique'] ?? 0, sdkHeaders(clientKey)),
  },
  {
    name: 'get-gzip',
    description:
      'GET /proxy?<context> as get-unique, from a browser that accepts compression (`Accept-Encoding: gzip, deflate`, what Chrome sends over plain HTTP): every answer is compressed',
    perFlagCount: false,
    expected: [200],
    create: ({ clientKey }) => uniqueGets(UNIQUE_BASE['get-gzip'] ?? 0, { ...sdkHeaders(clientKey), 'accept-encoding': 'gzip, deflate' }),
  },
  {
    name: 'post-unique',
    description: 'POST /proxy {"context":...}: a different context on every request, all enabled toggles',
    perFlagCount: true,
    // Above 1000 flags it costs what get-unique does (the same evaluation and answer, a body instead of a query).
    maxFlags: 1000,
    expected: [200],
    create: ({ clientKey }) =>
      uniquePosts(UNIQUE_BASE['post-unique'] ?? 0, { ...sdkHeaders(clientKey), 'content-type': 'application/json' }, (n) => ({
        path: '/proxy',
        body: postBody(contextFor(n)),
      })),
  },
  {
    name: 'post-named',
    description: 'POST /proxy {"context":...,"toggles":[10 names]}: a different context on every request, one result per name',
    perFlagCount: true,
    expected: [200],
    create: ({ clientKey, namedToggles }) =>
      uniquePosts(UNIQUE_BASE['post-named'] ?? 0, { ...sdkHeaders(clientKey), 'content-type': 'application/json' }, (n) => ({
        path: '/proxy',
        body: postBody(contextFor(n), namedToggles),
      })),
  },
  {
    name: 'poll-etag',
    description:
      'SDK polling: a fixed population of clients (`@<n>` in the row name), each repeating its own GET with If-None-Match of its last answer; every client gets its ETag before the warm-up',
    perFlagCount: false,
    expected: [200, 304],
    create: sdkPolls(POLL_BASE),
  },
  {
    name: 'ofrep-unique',
    description: `OFREP: POST ${OFREP_BULK} {"context":...} (OpenFeature's bulk evaluation, every flag with its value and reason) with a different context on every request; flag-proxy only`,
    perFlagCount: false,
    expected: [200],
    create: ({ clientKey }) =>
      uniquePosts(UNIQUE_BASE['ofrep-unique'] ?? 0, ofrepHeaders(clientKey), (n) => ({ path: OFREP_BULK, body: ofrepBody(contextFor(n)) })),
  },
  {
    name: 'ofrep-single',
    description: `OFREP: POST ${OFREP_BULK}/<key> {"context":...} (one flag, what a server-side OFREP provider asks on each evaluation) for the nine post-named flags that exist in turn, with a different context on every request; flag-proxy only`,
    perFlagCount: false,
    // One of the nine has variants whose payloads differ in type: the variants of the other type
    // are OFREP's 400 PARSE_ERROR (about 0.2% of the answers), as the bulk answer lists them.
    expected: [200, 400],
    create({ clientKey, namedToggles }) {
      // The unknown name of post-named would be a 404 FLAG_NOT_FOUND: a different question.
      const keys = namedToggles.filter((name) => name !== UNKNOWN_TOGGLE);
      return uniquePosts(UNIQUE_BASE['ofrep-single'] ?? 0, ofrepHeaders(clientKey), (n) => ({
        path: `${OFREP_BULK}/${encodeURIComponent(keys[n % keys.length] as string)}`,
        body: ofrepBody(contextFor(n)),
      }));
    },
  },
  {
    name: 'ofrep-poll',
    description:
      `OFREP polling: a fixed population of clients (\`@<n>\` in the row name), each re-POSTing its own context to ${OFREP_BULK} with If-None-Match of its last ETag (what a web provider does on each poll); every client gets its ETag before the warm-up; flag-proxy only`,
    perFlagCount: false,
    expected: [200, 304],
    create: ({ clientKey, pollClients, primePasses }) =>
      polling(
        'POST',
        ofrepHeaders(clientKey),
        Array.from({ length: pollClients }, (_, i) => ({ path: OFREP_BULK, body: ofrepBody(contextFor(OFREP_POLL_BASE + i)), etag: '' })),
        primePasses,
      ),
  },
  {
    name: 'post-poll',
    description:
      'Frontend SDK polling by POST (`unleash-proxy-client` with `usePOSTrequests`, configured as for Edge): a fixed population of clients (`@<n>` in the row name), each re-POSTing `{"context":...}` to /api/frontend with If-None-Match of its last ETag; every client gets its ETag before the warm-up; flag-proxy only',
    perFlagCount: false,
    expected: [200, 304],
    create: ({ clientKey, pollClients, primePasses }) =>
      polling(
        'POST',
        { ...sdkHeaders(clientKey), 'content-type': 'application/json' },
        Array.from({ length: pollClients }, (_, i) => ({ path: FRONTEND_API, body: postBody(contextFor(POST_POLL_BASE + i)), etag: '' })),
        primePasses,
      ),
  },
  {
    name: 'poll-scheduled',
    description:
      'SDK polling as `poll-etag` while a change is scheduled: for its windows the upstream adds a flag that is on for everyone until a day later (a `currentTime` DATE_BEFORE constraint), so every answer holds only until that instant; flag-proxy only',
    perFlagCount: false,
    expected: [200, 304],
    upstream: { toggle: SCHEDULED_FLAG, add: (flags) => flags.upsertFeature(scheduledFlag(Date.now() + 24 * 3600 * 1000)) },
    create: sdkPolls(SCHEDULED_POLL_BASE),
  },
  {
    name: 'poll-after-change',
    description:
      'SDK polling as `poll-etag` once a flag change has passed that left every answer as it was: after priming, the upstream adds a flag on for one other user only, each client polls once more (unmeasured, with the ETag it was primed with), then the window; flag-proxy only',
    perFlagCount: false,
    expected: [200, 304],
    upstream: { toggle: UNRELATED_FLAG, add: (flags) => flags.upsertFeature(unrelatedFlag(ADOPTION_USER)), afterPriming: true },
    create: sdkPolls(CHANGE_POLL_BASE),
  },
  {
    name: 'preflight',
    description: 'OPTIONS /proxy: the CORS preflight a browser sends before each SDK poll',
    perFlagCount: false,
    expected: [204],
    create() {
      return { requests: [{ method: 'OPTIONS', path: '/proxy', headers: preflightHeaders() }] };
    },
  },
  {
    name: 'client-metrics',
    description: `POST ${CLIENT_METRICS}: the usage report a browser SDK sends every 30 s, as often as it polls (yes/no counts for the ten post-named names, a different report on every request)`,
    perFlagCount: false,
    expected: [200],
    create: ({ clientKey, namedToggles }) =>
      uniquePosts(0, { ...sdkHeaders(clientKey), 'content-type': 'application/json' }, (n) => ({ path: CLIENT_METRICS, body: metricsBody(namedToggles, n) })),
  },
  {
    name: 'get-hot',
    description: 'GET /proxy?<context> for 10 contexts in turn, without If-None-Match (a few busy users or a server-side caller)',
    perFlagCount: true,
    expected: [200],
    create({ clientKey }) {
      const headers = sdkHeaders(clientKey);
      return { requests: HOT_IDS.map((id) => ({ method: 'GET' as const, path: `/proxy?${queryFor(contextFor(id))}`, headers })) };
    },
  },
  {
    name: 'health',
    description: 'GET /proxy/health (load balancers and orchestrators)',
    perFlagCount: false,
    expected: [200],
    create() {
      return { requests: [{ method: 'GET', path: '/proxy/health' }] };
    },
  },
];

export const HOT_CONTEXT_IDS = HOT_IDS;
export const POLL_CONTEXT_BASE = POLL_BASE;
