/**
 * Server-side rendering: what a browser SDK needs to start with the right flags and no network
 * round trip, taken from the proxy's own answer for the context (the answer cache, its bytes and
 * its ETag), with the context echoed so the SDK's first fetch asks for exactly the same answer.
 * A thin surface over the evaluation service, like the in-process API.
 */
import { randomUUID } from 'node:crypto';
import { buildContext, type EvaluationContext } from './core/context.js';
import { NOT_READY_MESSAGE } from './core/parts.js';
import type { EvaluationService, ToggleResult } from './core/service.js';
import { FlagProxyError } from './errors.js';
import { asWireInput, isBuilt, type InProcessContext } from './in-process.js';

/**
 * The context a browser SDK is started with: the Unleash context in the wire's form (strings
 * only), as `unleash-proxy-client` sends it in its query. Pass it to `proxy.isEnabled` and the
 * other in-process calls to render with exactly what the SDK will send. (A type, not an
 * interface, so that it meets {@link InProcessContext}'s index signature.)
 */
export type BootstrapContext = {
  /** The name the answer was evaluated under; give it to the SDK as its context's `appName`. */
  appName: string;
  environment?: string;
  userId?: string;
  /** Given or generated: keeps gradual rollouts by session the same in the page and in the SDK. */
  sessionId: string;
  remoteAddress?: string;
  currentTime?: string;
  properties?: Record<string, string>;
};

/** What {@link SsrApi.bootstrap} gives: the start of a browser SDK, without a round trip. */
export interface FlagBootstrap {
  /**
   * The toggles `GET /proxy` answers for `context`, parsed from the same bytes: what
   * `unleash-proxy-client` takes as `bootstrap` (and `@unleash/proxy-client-react` as
   * `bootstrap` in its config).
   */
  toggles: ToggleResult[];
  /** The ETag `GET /proxy` sends with that answer. */
  etag: string;
  /** The context to start the SDK with (its `context`, with `appName` from here). */
  context: BootstrapContext;
}

/** The server-side-rendering API on every proxy. */
export interface SsrApi {
  /**
   * The toggles, ETag and context a browser SDK starts with: byte for byte what `GET /proxy`
   * answers when that SDK asks with the echoed `context`, so its first fetch cannot change what
   * the page shows. A `sessionId` is generated when the context has none (keep it, e.g. in a
   * cookie, to keep it stable across pages). Throws `NOT_READY` before the proxy is ready.
   *
   * @example
   * ```ts
   * const context = await proxy.contextFromRequest(req, { userId: user.id, sessionId: cookies.sid });
   * const data = proxy.bootstrap(context);
   * res.send(`<html>…${bootstrapScript(data)}…</html>`);
   * ```
   */
  bootstrap(context?: InProcessContext | EvaluationContext): FlagBootstrap;
}

/** What a context's wire form holds besides properties (`currentTime` is written as ISO). */
const ECHOED_FIELDS = ['environment', 'userId', 'remoteAddress'] as const;

/** The wire form of a built context: every value a string, as a query carries it. */
function echoOf(context: EvaluationContext, appName: string, sessionId: string): BootstrapContext {
  const echo: BootstrapContext = { appName, sessionId };
  for (const field of ECHOED_FIELDS) {
    const value = context[field];
    if (value !== undefined) echo[field] = value;
  }
  if (context.currentTime instanceof Date) echo.currentTime = context.currentTime.toISOString();
  const names = Object.keys(context.properties);
  if (names.length > 0) {
    // No prototype: a property named `__proto__` is a plain key here too.
    const properties = Object.create(null) as Record<string, string>;
    for (const name of names) properties[name] = String(context.properties[name]);
    echo.properties = properties;
  }
  return echo;
}

/** Builds the SSR API over an evaluation service. */
export function createSsrApi(service: EvaluationService): SsrApi {
  return {
    bootstrap(given) {
      if (!service.isReady()) {
        throw new FlagProxyError('NOT_READY', `${NOT_READY_MESSAGE} Await \`proxy.ready\` before rendering with flags.`, { status: 503 });
      }
      const fromRequest = isBuilt(given);
      // A copy either way: the caller's object (perhaps reused) is never changed.
      let context: EvaluationContext;
      if (fromRequest) {
        context = { ...given, properties: { ...given.properties } };
      } else {
        context = buildContext(asWireInput(given));
      }
      const sessionId = (context.sessionId ??= randomUUID());
      // Without an appName, evaluation would see the proxy's and the SDK would send its own.
      const appName = (context.appName ??= service.config.appName);
      const echo = echoOf(context, appName, sessionId);
      // A given context is evaluated from its echo, as the route will build it from the SDK's
      // query: strings only, then the enrichers and the configured environment. One from
      // `contextFromRequest` is evaluated as built: on the SDK's request, the host's hook and the
      // enrichers give the same fields again.
      const evaluated = fromRequest ? context : service.localContext(echo);
      const { etag, answer } = service.answer({ context: evaluated, selection: { all: false, names: undefined } });
      // No `fresh` check was asked, so this is never a 304: the answer is there.
      const body = (answer as NonNullable<typeof answer>).body;
      const toggles = (JSON.parse(body.toString()) as { toggles: ToggleResult[] }).toggles;
      return { toggles, etag, context: echo };
    },
  };
}
