/**
 * What the adapters share: the proxy an adapter serves (one it is given, or one it creates from
 * options), the host hooks that reach the framework's own request object, and the mount-prefix
 * arithmetic. Like the adapters, this imports only the public surface.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createFlagProxy, FlagProxyError, unmapIpv4, type FlagProxy, type FlagProxyOptions, type HostContextFields } from '../index.js';

/** Context fields a host derives from its own session; they override what the caller sent. */
export type HostContext = HostContextFields | undefined;

/** A host hook given the framework's own request object (Express `req`, Koa `ctx`, Fastify `request`, `Request`). */
export type HostContextHook<T> = (request: T) => HostContext | Promise<HostContext>;

/** Options every adapter takes. */
export interface AdapterOptions<T> {
  /**
   * Binds context fields (userId, tenant, …) from the host's own session, given the framework's
   * own request object; they override what the caller sent, so a browser cannot spoof them.
   * Needs proxy options (the adapter then creates the proxy), not an already created proxy.
   * @default undefined
   */
  context?: HostContextHook<T>;
}

/** What every adapter returns carries the proxy it serves: `await x.proxy.ready`, `await x.proxy.close()`. */
export interface WithProxy {
  /** The proxy behind this adapter (created by the adapter when it was given options). */
  readonly proxy: FlagProxy;
}

/**
 * `top` over `base`: defined fields of `top` win; `properties` merge key by key. A key `top` returns
 * as `undefined` stays claimed (present, `undefined`) unless `base` gave it a value: the proxy then
 * drops the caller's value for it (see `overlayContext`).
 */
export function layerContext(base: HostContext, top: HostContext): HostContext {
  if (!base || !top) return top ?? base;
  const out: Record<string, unknown> = { ...base, properties: { ...base.properties } };
  const properties = out.properties as Record<string, unknown>;
  for (const [key, value] of Object.entries(top)) {
    if (key === 'properties' && typeof value === 'object' && value !== null) {
      for (const [name, property] of Object.entries(value)) if (property !== undefined || !(name in properties)) properties[name] = property;
    } else if (value !== undefined || !(key in out)) {
      out[key] = value;
    }
  }
  return out;
}

/** How an adapter reaches the framework from a node request. */
export interface AdapterHooks {
  /** The framework's own client address (Express `req.ip`, Koa `ctx.ip`, …), used while `trustProxy` is unset. */
  address?: (req: IncomingMessage) => string | undefined;
  /** The adapter's `context` option, reached through the node request. */
  context?: (req: IncomingMessage) => HostContext | Promise<HostContext>;
}

/**
 * The proxy an adapter serves. Given options, it is created here with one `context` hook that
 * layers, lowest first: the framework's client address when the host trusts a proxy hop (only
 * while `trustProxy` is unset), the options' own `context`, then the adapter's `context`.
 * Given a created proxy, its own options apply and no adapter hook can be added to it.
 */
export function adapterProxy(target: FlagProxy | FlagProxyOptions, hooks: AdapterHooks): FlagProxy {
  if (typeof target === 'function') {
    if (hooks.context) {
      throw new FlagProxyError(
        'INVALID_OPTION',
        "Invalid option context: an adapter's context hook needs proxy options, not a created proxy; pass the options to the adapter, or give createFlagProxy its own context option",
        { status: 500 },
      );
    }
    return target;
  }
  // Only an address the framework took from a trusted hop counts (the proxy's `clientAddress`
  // rule); otherwise the proxy's own rule stands. Either way an IPv4 client gets its IPv4 form.
  const address = target.trustProxy === undefined && target.clientAddress === undefined ? hooks.address : undefined;
  const { context } = hooks;
  if (!address && !context) return createFlagProxy(target);
  const own = target.context;
  return createFlagProxy({
    ...target,
    ...(address ? { clientAddress: (req: IncomingMessage) => unmapIpv4(address(req)) } : {}),
    ...(context ? { context: async (req: IncomingMessage) => layerContext(await own?.(req), await context(req)) } : {}),
  });
}

/** `' /API/flags/ '` → `'/api/flags'`; blank or `/` → `''`. */
export function normalizePrefix(prefix: string | undefined): string {
  const trimmed = (prefix ?? '').trim().replace(/\/+$/, '').toLowerCase();
  return trimmed === '' ? '' : trimmed.startsWith('/') ? trimmed : `/${trimmed}`;
}

/**
 * `url` as seen below `prefix` (`/api/flags/proxy?x` below `/api/flags` is `/proxy?x`), or
 * `undefined` when it is not under it. Whole segments, case-insensitive like the proxy's own paths.
 */
export function below(url: string, prefix: string): string | undefined {
  if (prefix === '') return url;
  if (!url.toLowerCase().startsWith(prefix)) return undefined;
  const rest = url.slice(prefix.length);
  if (rest === '' || rest.startsWith('?')) return `/${rest}`;
  return rest.startsWith('/') ? rest : undefined;
}

/** How {@link runHandler} ended when the proxy did not answer: it passed the request on. */
export interface PassedOn {
  /** Set when an unexpected error was handed on (a FlagProxyError with `status: 500, expose: false`). */
  error?: unknown;
}

/**
 * Runs the proxy's Connect handler on a node request and response, with `req.url` set to `url`
 * (the path below the mount) while it matches, as koa-mount does. Resolves `undefined` once the
 * proxy's answer is written (or the connection closed), or {@link PassedOn} when it called
 * `next`. Never rejects and never stalls.
 */
export function runHandler(handler: FlagProxy, req: IncomingMessage, res: ServerResponse, url: string): Promise<PassedOn | undefined> {
  return new Promise((resolve) => {
    const written = (): void => resolve(undefined);
    const passOn = (error?: unknown): void => {
      res.off('finish', written).off('close', written);
      // Connect's convention: a falsy argument to next() is no error.
      resolve(error ? { error } : {});
    };
    res.once('finish', written).once('close', written);
    const original = req.url;
    // The path as the client sent it, where Express keeps it: routes that hand out URLs need it.
    (req as IncomingMessage & { originalUrl?: string }).originalUrl ??= original;
    req.url = url;
    try {
      handler(req, res, passOn);
    } catch (error) {
      passOn(error);
    } finally {
      req.url = original;
    }
  });
}
