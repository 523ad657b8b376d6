/**
 * CORS as the `cors` middleware (2.8) answers it, with the headers computed once per proxy when
 * they do not depend on the request: an origin of `*` or one fixed origin (the default and the
 * usual setting). The preflight is then a precomputed header list written at once, and other
 * answers get their CORS headers as a list the writer puts on the wire with its own. A list of
 * origins, `origin: true`, a falsy origin, `preflightContinue`, or a response a host already set
 * headers on all take the middleware itself, so every configuration answers as it always did.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ResolvedCors } from '../config/resolve.js';
import { hasHeaders, writeHeadFields, type HeaderList } from './http.js';
import { loadOnDemand } from '../load-on-demand.js';

/** What the handler asks of CORS. */
export interface CorsPolicy {
  /**
   * The CORS headers of every non-preflight answer when they are the same for every request;
   * `undefined` when the middleware decides per request.
   */
  readonly fixed: HeaderList | undefined;
  /**
   * Answers a preflight with the precomputed headers and returns true, or returns false (nothing
   * written) when the middleware must answer it: a per-request origin, `preflightContinue`, or
   * headers already set on `res` by a host (the middleware merges `Vary` with them).
   */
  answerPreflight(req: IncomingMessage, res: ServerResponse): boolean;
  /** The `cors` middleware over the same settings: the general path. */
  readonly middleware: (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;
}

/** What the middleware makes of a string-or-list setting: lists joined by `,`. */
const joined = (value: string | readonly string[] | undefined): string | undefined =>
  typeof value === 'string' || value === undefined ? value : value.join(',');

/** Builds the CORS policy of one proxy's settings. */
export function createCorsPolicy(settings: ResolvedCors): CorsPolicy {
  const cors = loadOnDemand('cors') as typeof import('cors');
  const middleware = cors({ ...settings });
  const { origin } = settings;
  // `*` and one fixed origin are the same for every request; `true` and lists reflect the caller.
  if (typeof origin !== 'string' || origin === '') return { fixed: undefined, answerPreflight: () => false, middleware };

  // In the middleware's order; a header whose value is empty is left out, as it leaves it out.
  const originPart: string[] = ['Access-Control-Allow-Origin', origin];
  const varyOrigin = origin !== '*';
  const credentials: string[] = settings.credentials ? ['Access-Control-Allow-Credentials', 'true'] : [];
  const exposed = joined(settings.exposedHeaders);
  const exposedPart: string[] = exposed ? ['Access-Control-Expose-Headers', exposed] : [];
  const fixed: HeaderList = [...originPart, ...(varyOrigin ? ['Vary', 'Origin'] : []), ...credentials, ...exposedPart];

  if (settings.preflightContinue) return { fixed, answerPreflight: () => false, middleware };

  const methods = joined(settings.methods);
  // No allowedHeaders (or an empty string): the request's own are reflected, and Vary says so.
  const configured = joined(settings.allowedHeaders);
  const reflect = !settings.allowedHeaders;
  const vary = [...(varyOrigin ? ['Origin'] : []), ...(reflect ? ['Access-Control-Request-Headers'] : [])].join(', ');
  // Vary keeps the place where it was first set: after the origin when the origin sets it.
  const head: string[] = [
    ...originPart,
    ...(varyOrigin ? ['Vary', vary] : []),
    ...credentials,
    ...(methods ? ['Access-Control-Allow-Methods', methods] : []),
    ...(!varyOrigin && reflect ? ['Vary', vary] : []),
  ];
  const maxAge = String(settings.maxAge);
  const tail: string[] = ['Access-Control-Max-Age', maxAge, ...exposedPart, 'Content-Length', '0'];
  const status = settings.optionsSuccessStatus;
  // Without reflection the whole answer is one constant list.
  const constant: HeaderList | undefined = reflect ? undefined : [...head, ...(configured ? ['Access-Control-Allow-Headers', configured] : []), ...tail];
  const withoutRequested: HeaderList = [...head, ...tail];

  const answerPreflight = (req: IncomingMessage, res: ServerResponse): boolean => {
    if (hasHeaders(res)) return false;
    let headers = constant;
    if (headers === undefined) {
      const requested = req.headers['access-control-request-headers'];
      headers = requested ? [...head, 'Access-Control-Allow-Headers', requested, ...tail] : withoutRequested;
    }
    writeHeadFields(res, status, headers);
    res.end();
    return true;
  };
  return { fixed, answerPreflight, middleware };
}
