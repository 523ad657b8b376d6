/**
 * HTTP to the upstream flag API, shared by the flag repository and the usage reporter: one agent
 * per upstream (keep-alive, honouring HTTP(S)_PROXY / NO_PROXY and `rejectUnauthorized`), and a
 * GET that reads a whole answer or fails — never a half-read body taken for a whole one.
 */
import { isAscii } from 'node:buffer';
import http from 'node:http';
import https from 'node:https';
import { loadOnDemand } from '../load-on-demand.js';
import { VERSION } from '../version.js';

/** How flag-proxy names itself to the upstream (`unleash-sdk` header). */
export const SDK = `flag-proxy:${VERSION}`;

/** What every request to the upstream says of who sends it (token, app, instance, connection, SDK). */
export function identityHeaders(who: {
  token: string;
  appName: string;
  instanceId: string;
  connectionId: string;
  /** How often this kind of request is sent, in ms (`unleash-interval`). */
  interval: number;
}): Record<string, string> {
  return {
    authorization: who.token,
    'user-agent': who.appName,
    'unleash-appname': who.appName,
    'unleash-instanceid': who.instanceId,
    'unleash-connection-id': who.connectionId,
    'unleash-sdk': SDK,
    'unleash-interval': String(who.interval),
  };
}

/** The agent for requests to `url`: through the configured proxy, if any. */
export function agentFor(url: URL, rejectUnauthorized: boolean | undefined): http.Agent {
  const { getProxyForUrl } = loadOnDemand('proxy-from-env') as typeof import('proxy-from-env');
  const proxy = getProxyForUrl(url.href);
  const tls = rejectUnauthorized === undefined ? {} : { rejectUnauthorized };
  if (!proxy) return url.protocol === 'https:' ? new https.Agent({ keepAlive: true, ...tls }) : new http.Agent({ keepAlive: true });
  // Loaded only when a proxy applies: most deployments reach their upstream directly.
  if (url.protocol === 'https:') {
    const { HttpsProxyAgent } = loadOnDemand('https-proxy-agent') as typeof import('https-proxy-agent');
    return new HttpsProxyAgent(proxy, { keepAlive: true, ...tls });
  }
  const { HttpProxyAgent } = loadOnDemand('http-proxy-agent') as typeof import('http-proxy-agent');
  return new HttpProxyAgent(proxy, { keepAlive: true });
}

/** TLS options per request as well: a tunnelling agent (HTTPS_PROXY) takes them from the request. */
export function tlsOptions(rejectUnauthorized: boolean | undefined): { rejectUnauthorized?: boolean } {
  return rejectUnauthorized === undefined ? {} : { rejectUnauthorized };
}

/** A whole answer of the upstream. */
export interface UpstreamAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/**
 * The text of an answer. ASCII bytes (a flag set whose names, rules, payloads and descriptions
 * are all plain English) are read as latin1, the same text, which node keeps outside V8's heap
 * once it is over about a megabyte: the 3.3 MB answer of a 5000-flag set is then no string that
 * V8's young collections find alive while it is parsed (they moved it to the old generation, and
 * counted it towards growing the young one). Any other answer is decoded as UTF-8.
 */
function text(bytes: Buffer): string {
  return isAscii(bytes) ? bytes.toString('latin1') : bytes.toString('utf8');
}

/**
 * GETs `url`; resolves once the whole body arrived, rejects when the connection fails, the body is
 * cut short, the answer takes longer than `timeoutMs` in all, or `signal` aborts it.
 */
export function upstreamGet(
  url: URL,
  headers: Record<string, string>,
  options: { agent: http.Agent; timeoutMs: number; rejectUnauthorized: boolean | undefined; signal?: AbortSignal },
): Promise<UpstreamAnswer> {
  return new Promise((resolve, reject) => {
    const request = (url.protocol === 'https:' ? https : http).get(url, {
      agent: options.agent,
      headers,
      signal: options.signal,
      ...tlsOptions(options.rejectUnauthorized),
    });
    const deadline = setTimeout(() => request.destroy(new Error(`no whole answer within ${options.timeoutMs} ms`)), options.timeoutMs);
    const fail = (error: Error): void => {
      clearTimeout(deadline);
      reject(error);
    };
    request.on('error', fail);
    request.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', fail);
      res.on('close', () => {
        clearTimeout(deadline);
        if (!res.complete) return reject(new Error('the answer was cut short'));
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text(Buffer.concat(chunks)) });
      });
    });
  });
}
