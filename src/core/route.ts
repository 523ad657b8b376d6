/**
 * What a surface declares: its routes, each a pure function from a normalized request to a
 * normalized response over the evaluation service. The handler knows routes only through this
 * shape, so a new wire protocol is a new module plus its entry in the route table.
 */
import type { IncomingMessage } from 'node:http';
import type { ProxyResponse } from './http.js';
import type { EvaluationService } from './service.js';

/** A route's answer: immediate when it awaits nothing (a poll answered from the cache). */
export type Pending = ProxyResponse | Promise<ProxyResponse>;

/** One request as a route sees it. */
export interface RouteRequest {
  readonly req: IncomingMessage;
  /** The raw query string, without `?`. */
  readonly search: string;
  /** The parsed JSON body of a POST to a route with `body: true`; otherwise `undefined`. */
  readonly body: unknown;
  /** Path parameters (`:name` segments), decoded. */
  readonly params: Readonly<Record<string, string>>;
}

/** One route of a surface. */
export interface Route {
  /**
   * The path below the proxy's base path, lower case: `/proxy/all`, or with one trailing
   * parameter segment: `/api/frontend/features/:name`.
   */
  readonly path: string;
  readonly methods: readonly string[];
  /** The `route` label of its request metrics. @default path */
  readonly label?: string;
  /** Reads the JSON body of a POST first (415/413/400 on a bad one). @default false */
  readonly body?: boolean;
  /** Answers without CORS headers (the docs, as the predecessor served them). @default true */
  readonly cors?: boolean;
  handle(service: EvaluationService, request: RouteRequest): Pending;
}

/** A surface: a named group of routes, and the path prefixes it owns. */
export interface Surface {
  readonly name: string;
  /**
   * Paths (below the base path, lower case) whose whole subtree is the proxy's: a request there
   * on no route is answered 404 standalone and handed to `next()` mounted, as before.
   */
  readonly prefixes: readonly string[];
  readonly routes: readonly Route[];
}
