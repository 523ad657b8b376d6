/**
 * Usage reporting upstream (`POST <flagUrl>client/register` and `client/metrics`), in the format
 * the flag server's client API expects. Ours rather than unleash-client's because frontend SDK
 * reports must be added in bulk (work proportional to toggles, never to counts), a failed report
 * must be kept for the next one, and `close()` must flush what is left.
 */
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import { randomUUID } from 'node:crypto';
import type { Logger } from '../logger.js';
import { agentFor, identityHeaders, SDK, tlsOptions } from './upstream-http.js';
import { createUsageCounts, type ToggleCounts, type UsagePeriod } from './usage-counts.js';

export type { ToggleCounts } from './usage-counts.js';

/** Settings of the reporter, already validated. */
export interface UsageReporterSettings {
  url: string;
  token: string;
  appName: string;
  instanceId: string;
  metricsInterval: number;
  metricsJitter: number;
  strategies: string[];
  rejectUnauthorized: boolean | undefined;
  /** Most distinct known toggle names one report holds; counts of further names are dropped. */
  maxToggles: number;
  /** Most distinct unknown toggle names (not in the flag set) one report holds, apart from known ones. */
  maxUnknownToggles: number;
  timeoutMs: number;
  logger: Logger;
  onSent?: (ok: boolean) => void;
}

/** Collects usage counts and reports them upstream. */
export interface UsageReporter {
  /** Counts one evaluation; `known` says whether the toggle is in the flag set. */
  count(name: string, enabled: boolean, known: boolean): void;
  /** {@link count} bound to one name, its counts looked up once per reporting period. */
  counter(name: string, known: boolean): (enabled: boolean) => void;
  /** Adds counts in bulk (a frontend SDK report). */
  add(name: string, yes: number, no: number, variants: Record<string, number> | undefined, known: boolean): void;
  /** Registers upstream and starts the periodic reports. */
  start(): void;
  /** Sends what is collected now; keeps it for the next report when that fails. */
  flush(): Promise<boolean>;
  /** Stops the timer and sends the last report. */
  close(): Promise<void>;
  /** The counts not yet reported (for tests and diagnostics). */
  pending(): Readonly<Record<string, ToggleCounts>>;
}

const SPEC_VERSION = '5.2.0';

/** POSTs JSON to the flag server with the proxy's identity, one keep-alive agent per origin. */
interface UpstreamPoster {
  post(url: URL, body: unknown): Promise<number>;
  /** Closes the connections. */
  destroy(): void;
}

function createUpstreamPoster(
  settings: Pick<UsageReporterSettings, 'rejectUnauthorized' | 'timeoutMs'>,
  identity: Record<string, string>,
): UpstreamPoster {
  const agents = new Map<string, http.Agent>();
  const post = (url: URL, body: unknown): Promise<number> =>
    new Promise((resolve, reject) => {
      if (!agents.has(url.origin)) agents.set(url.origin, agentFor(url, settings.rejectUnauthorized));
      const payload = JSON.stringify(body);
      const request = (url.protocol === 'https:' ? https : http).request(url, {
        method: 'POST',
        agent: agents.get(url.origin),
        ...tlsOptions(settings.rejectUnauthorized),
        timeout: settings.timeoutMs,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
          ...identity,
        },
      });
      request.on('timeout', () => request.destroy(new Error(`timed out after ${settings.timeoutMs} ms`)));
      request.on('error', reject);
      request.on('response', (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', reject);
      });
      request.end(payload);
    });
  return {
    post,
    destroy() {
      for (const agent of agents.values()) agent?.destroy();
    },
  };
}

const runtime = {
  platformName: 'node',
  platformVersion: process.versions.node,
  yggdrasilVersion: null,
  specVersion: SPEC_VERSION,
} as const;

/** Where and as whom the reporter talks to the flag server. */
interface Channel {
  settings: UsageReporterSettings;
  upstream: UpstreamPoster;
  connectionId: string;
  started: Date;
  metricsUrl: URL;
  registerUrl: URL;
}

/** Resolves the URLs and the identity once, at creation. */
function openChannel(settings: UsageReporterSettings): Channel {
  const base = settings.url.endsWith('/') ? settings.url : `${settings.url}/`;
  const connectionId = randomUUID();
  const identity = identityHeaders({ ...settings, connectionId, interval: settings.metricsInterval });
  return {
    settings,
    upstream: createUpstreamPoster(settings, identity),
    connectionId,
    started: new Date(),
    metricsUrl: new URL('client/metrics', base),
    registerUrl: new URL('client/register', base),
  };
}

/** POSTs one period; `false` when the flag server did not take it. */
async function report({ settings, upstream, connectionId, metricsUrl }: Channel, period: UsagePeriod): Promise<boolean> {
  const body = {
    appName: settings.appName,
    instanceId: settings.instanceId,
    connectionId,
    bucket: { start: period.start, stop: new Date(), toggles: period.toggles },
    ...runtime,
  };
  try {
    const status = await upstream.post(metricsUrl, body);
    const ok = status >= 200 && status < 300;
    if (!ok) settings.logger.warn(`Usage report to ${metricsUrl.pathname} answered ${status}; kept for the next report`);
    return ok;
  } catch (error) {
    settings.logger.warn(`Usage report to ${metricsUrl.pathname} failed; kept for the next report`, error);
    return false;
  }
}

/** Registers the proxy upstream; a failure is logged, never thrown. */
function register({ settings, upstream, connectionId, started, registerUrl }: Channel): Promise<void> {
  const registration = {
    appName: settings.appName,
    instanceId: settings.instanceId,
    sdkVersion: SDK,
    strategies: settings.strategies,
    started,
    interval: settings.metricsInterval,
    connectionId,
    ...runtime,
  };
  return upstream.post(registerUrl, registration).then(
    (status) => {
      if (status < 200 || status >= 300) settings.logger.warn(`Registration upstream answered ${status}`);
    },
    (error) => settings.logger.warn('Registration upstream failed', error),
  );
}

/** Creates a reporter; nothing is sent before {@link UsageReporter.start}. */
export function createUsageReporter(settings: UsageReporterSettings): UsageReporter {
  const channel = openChannel(settings);
  const counts = createUsageCounts(settings);
  let timer: NodeJS.Timeout | undefined;
  let failures = 0;
  let closed = false;
  let inFlight: Promise<boolean> | undefined;
  /** The registration in flight: `close()` waits for it before it destroys the connections. */
  let registering: Promise<void> | undefined;

  const schedule = (): void => {
    if (closed || settings.metricsInterval === 0) return;
    const jitter = settings.metricsJitter > 0 ? Math.floor(Math.random() * settings.metricsJitter) : 0;
    const backoff = Math.min(failures, 10) * settings.metricsInterval;
    timer = setTimeout(() => void flush().finally(schedule), settings.metricsInterval + backoff + jitter);
    timer.unref();
  };

  const send = async (): Promise<boolean> => {
    const dropped = counts.takeDropped();
    if (dropped > 0) {
      settings.logger.warn(`Usage report: counts of ${dropped} toggle name(s) dropped this period (more distinct names than a report holds)`);
    }
    if (counts.size() === 0) return true;
    const period = counts.take();
    const ok = await report(channel, period);
    if (!ok) counts.restore(period);
    failures = ok ? Math.max(0, failures - 1) : failures + 1;
    settings.onSent?.(ok);
    return ok;
  };

  const flush = (): Promise<boolean> => {
    // One report at a time, so a slow upstream never gets the same counts twice.
    inFlight ??= send().finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };

  return {
    count: counts.count,
    counter: counts.counter,
    add: counts.add,
    start() {
      if (closed || settings.metricsInterval === 0 || timer) return;
      registering = register(channel);
      schedule();
    },
    flush,
    async close() {
      if (closed) return;
      closed = true;
      if (timer) clearTimeout(timer);
      await inFlight;
      const lastReport = async (): Promise<void> => {
        // One retry: a last report lost to a blip would lose a whole period of usage.
        if (!(await send()) && !(await send())) {
          settings.logger.error(`Could not send the last usage report upstream; ${counts.size()} toggles' counts were lost`);
        }
      };
      // Destroying the connections under a registration still in flight would fail it (and log so).
      await Promise.all([registering, lastReport()]);
      channel.upstream.destroy();
    },
    pending: counts.pending,
  };
}

/** A readable default instance id: `<user>-<host>` like the predecessor, else a random one. */
export function defaultInstanceId(): string {
  try {
    return `${os.userInfo().username}-${os.hostname()}`;
  } catch {
    return `generated-${Math.round(Math.random() * 1e6)}-${process.pid}`;
  }
}
