/**
 * Startup and refresh control of one proxy. By default a proxy answers 503 until its first flag
 * set is loaded and never gives up; `waitUntilReady` lets a host (or the CLI) decide how long is
 * too long, and says why when it is. `refresh` fetches the flag set now instead of at the next
 * poll: for tests, and for hosts told of a change by a webhook or an admin event.
 */
import type { Engine } from '../evaluation/engine.js';
import { FlagProxyError } from '../errors.js';
import { redactUrlCredentials } from '../logger.js';

/** Options of `waitUntilReady`. */
export interface WaitUntilReadyOptions {
  /**
   * Reject after this many milliseconds without a flag set. The proxy itself keeps trying (and
   * answering 503) whatever the outcome. @default no bound: waits as long as it takes
   */
  timeoutMs?: number;
}

/** Startup methods of a proxy. */
export interface ProxyLifecycle {
  /**
   * Resolves once the proxy is ready (its first flag set loaded). With `timeoutMs`, rejects after
   * that long with a FlagProxyError `READY_TIMEOUT` naming the upstream (credentials redacted) and
   * its last failure; rejects with `NOT_READY` once the proxy is closed.
   *
   * @example
   * ```ts
   * const proxy = createFlagProxy(options);
   * await proxy.waitUntilReady({ timeoutMs: 10_000 }); // e.g. "... responded 401 ..." after 10 s
   * app.listen(3000);
   * ```
   */
  waitUntilReady(options?: WaitUntilReadyOptions): Promise<void>;
  /**
   * Fetches the flag set now, after any fetch in flight, and resolves once the proxy answers from
   * it (also when it was unchanged; a proxy not ready yet becomes ready). Rejects with a
   * FlagProxyError `UPSTREAM` naming the failure (the last good flag set stays), or `NOT_READY`
   * once the proxy is closed. Polling goes on as configured; with `refreshInterval: 0` this is
   * the only fetch.
   *
   * @example
   * ```ts
   * upstream.setEnabled('new-checkout', true); // flag-proxy/testing
   * await proxy.refresh();
   * // the next GET /proxy answers with new-checkout enabled
   * ```
   */
  refresh(): Promise<void>;
}

/** What the lifecycle methods of one proxy work on. */
export interface LifecycleParts {
  engine: Engine;
  /** The proxy's `ready` promise. */
  ready: Promise<void>;
  isReady(): boolean;
  flagUrl: string;
}


const closedError = (): FlagProxyError => new FlagProxyError('NOT_READY', 'The proxy is closed', { status: 503 });

function timeoutError(parts: LifecycleParts, timeoutMs: number): FlagProxyError {
  const failure = parts.engine.lastFailure();
  const why = failure === undefined ? 'no answer so far' : `last failure: ${failure}`;
  return new FlagProxyError(
    'READY_TIMEOUT',
    redactUrlCredentials(`The flag proxy was not ready within ${timeoutMs} ms: no flag set from ${parts.flagUrl} yet (${why})`),
    { status: 503 },
  );
}

async function refresh(parts: LifecycleParts): Promise<void> {
  if (parts.engine.isClosed()) throw closedError();
  try {
    await parts.engine.refresh();
  } catch (error) {
    if (parts.engine.isClosed()) throw closedError();
    const reason = error instanceof Error ? error.message : String(error);
    throw new FlagProxyError('UPSTREAM', redactUrlCredentials(`Refreshing the flag set from ${parts.flagUrl} failed: ${reason}`), { status: 502 });
  }
  if (parts.engine.isClosed()) throw closedError();
  // A first flag set announces readiness a tick after it is adopted.
  if (!parts.isReady()) await parts.ready;
}

/** Creates the lifecycle methods of one proxy. */
export function createLifecycle(parts: LifecycleParts): ProxyLifecycle {
  return {
    refresh: () => refresh(parts),
    waitUntilReady(options = {}) {
      const { timeoutMs } = options;
      if (timeoutMs !== undefined && !(Number.isFinite(timeoutMs) && timeoutMs >= 0)) {
        return Promise.reject(
          new FlagProxyError('INVALID_OPTION', `Invalid option timeoutMs: must be a non-negative number of milliseconds, got ${String(timeoutMs)}`),
        );
      }
      if (parts.engine.isClosed()) return Promise.reject(closedError());
      if (parts.isReady() || timeoutMs === undefined) return parts.ready;
      return new Promise<void>((resolve, reject) => {
        // Not unref'd: whoever awaits this wants the rejection even if nothing else keeps the process up.
        const timer = setTimeout(() => reject(timeoutError(parts, timeoutMs)), timeoutMs);
        parts.ready.then(
          () => {
            clearTimeout(timer);
            resolve();
          },
          (error: unknown) => {
            clearTimeout(timer);
            reject(error);
          },
        );
      });
    },
  };
}
