/**
 * Who a request is, as far as an answer depends on it: the caller's address (the host's
 * `clientAddress` reader, else the socket or `X-Forwarded-For` under `trustProxy`) and the request
 * tag, a keyed hash of everything a stable answer depends on, so a poll can be answered 304 from the
 * request alone (see README "Performance"); or, where a `context` hook or enrichers build the
 * context, the context tag, the same from the built context, so such a poll is answered 304 before
 * anything is evaluated.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { unmapIpv4 } from '../client-address.js';
import type { FlagProxyConfig } from '../config/resolve.js';
import type { Engine, Snapshot } from '../evaluation/engine.js';
import { digestText } from '../digests.js';
import { clientIp } from './parts.js';

/** The request identity of one proxy. */
export interface RequestIdentity {
  /** An address the host's `clientAddress` reader gives, when it differs from the socket's. */
  hostAddress(req: IncomingMessage): string | undefined;
  /** The caller's address as the context gets it. */
  callerAddress(req: IncomingMessage): string | undefined;
  /**
   * The request tag of a route (`scope`) given the request's own input (the raw query of a GET, a
   * canonical form of the context a POST sent); `undefined` with a `context` hook or enrichers.
   */
  requestTag(req: IncomingMessage, scope: string, input: string): string | undefined;
  /**
   * The tag of an answer by what it was built from: the flag set's content, the presented key and
   * the answer's cache key (route, names and the built context in normal form). For requests whose
   * context a `context` hook or enrichers helped build, which have no {@link requestTag}.
   */
  contextTag(clientKey: string, answerKey: string): string;
  /**
   * The tag of an answer that holds only until `until` (epoch ms: the next instant of a date
   * constraint): `tag` (a request or context tag) and that instant, keyed as they are. A poll made
   * before it finds the same instant as the flag set's next one, so the same tag; from it on, not.
   */
  timedTag(tag: string, until: number): string;
}

/** Builds the request identity of one proxy. */
export function createRequestIdentity(config: FlagProxyConfig, engine: Engine): RequestIdentity {
  /** An address the host's `clientAddress` reader gives, when it differs from the socket's. */
  const hostAddress = (req: IncomingMessage): string | undefined => {
    if (config.clientAddress === undefined) return undefined;
    const given = unmapIpv4(config.clientAddress(req));
    return given !== undefined && given !== '' && given !== unmapIpv4(req.socket.remoteAddress) ? given : undefined;
  };
  /** The caller's address as the context gets it. */
  const callerAddress = (req: IncomingMessage): string | undefined => hostAddress(req) ?? clientIp(req, config);
  // Request tags: keyed by the upstream identity and the keys taken, so a fleet with one
  // configuration agrees, and a tag given before a key was revoked is no pass for it (a poll whose
  // tag matches skips the key check: only admitted requests are given one).
  const keys = JSON.stringify([[...config.clientKeys].sort(), [...config.serverSideTokens].sort()]);
  const tagKey = createHash('sha256').update(`flag-proxy request tag\0${config.flagUrl}\0${config.flagApiToken}\0${keys}`).digest('base64url');
  const taggable = config.contextHook === undefined && config.enrichers.length === 0;
  // What the flag set's content hashes to (revisions are per process, content is not), made as the
  // snapshot was built.
  const contentHash = (snapshot: Snapshot): string => snapshot.digest;

  // A tag only has to be equal for equal inputs and unguessable without the key: SHA-256 over the
  // key and the input does both, in a fifth of an HMAC's time (0.3 against 1.5 µs), on every poll.
  const tagOf = (input: string): string => digestText('sha256', `${tagKey}\0${input}`, 'base64url').slice(0, 22);
  const requestTag = (req: IncomingMessage, scope: string, input: string): string | undefined => {
    if (!taggable) return undefined;
    const key = req.headers[config.clientKeysHeaderName];
    const ip = callerAddress(req) ?? '';
    return tagOf(`${contentHash(engine.snapshot())}\0${scope}\0${typeof key === 'string' ? key : ''}\0${ip}\0${input}`);
  };
  // `derived` stands where a request tag has its route (`a`, `e` or `o`), so the two never share an input.
  const contextTag = (clientKey: string, answerKey: string): string =>
    tagOf(`${contentHash(engine.snapshot())}\0derived\0${clientKey}\0${answerKey}`);
  const timedTag = (tag: string, until: number): string => tagOf(`${tag}\0until\0${until}`);
  return { hostAddress, callerAddress, requestTag, contextTag, timedTag };
}
