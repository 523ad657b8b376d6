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

/** Counts of one toggle in one reporting period. */
export interface ToggleCounts {
  yes: number;
  no: number;
  variants: Record<string, number>;
}

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

/** Creates a reporter; nothing is sent before {@link UsageReporter.start}. */
export function createUsageReporter(settings: UsageReporterSettings): UsageReporter {
  const base = settings.url.endsWith('/') ? settings.url : `${settings.url}/`;
  const connectionId = randomUUID();
  const identity = identityHeaders({ ...settings, connectionId, interval: settings.metricsInterval });
  const started = new Date();
  const metricsUrl = new URL('client/metrics', base);
  const registerUrl = new URL('client/register', base);
  const agents = new Map<string, http.Agent>();
  let toggles: Record<string, ToggleCounts> = Object.create(null);
  let size = 0;
  // Unknown names (anyone with a client key can invent them) get their own budget, so they can
  // never crowd out the usage of real toggles.
  let unknownSize = 0;
  let dropped = 0;
  let bucketStart = new Date();
  let timer: NodeJS.Timeout | undefined;
  let failures = 0;
  let closed = false;
  let inFlight: Promise<boolean> | undefined;
  /** The registration in flight: `close()` waits for it before it destroys the connections. */
  let registering: Promise<void> | undefined;

  /** The counts of a name, made on first use; `undefined` when the name's budget is spent. */
  const entry = (name: string, known: boolean | 'restore'): ToggleCounts | undefined => {
    let counts = toggles[name];
    if (counts) return counts;
    if (known === 'restore' || known) {
      if (known !== 'restore' && size >= settings.maxToggles) {
        dropped += 1;
        return undefined;
      }
      size += 1;
    } else {
      if (unknownSize >= settings.maxUnknownToggles) {
        dropped += 1;
        return undefined;
      }
      unknownSize += 1;
    }
    counts = { yes: 0, no: 0, variants: Object.create(null) };
    toggles[name] = counts;
    return counts;
  };

  const merge = (
    name: string,
    yes: number,
    no: number,
    variants: Record<string, number> | undefined,
    known: boolean | 'restore',
  ): void => {
    const counts = entry(name, known);
    if (!counts) return;
    counts.yes += yes;
    counts.no += no;
    if (variants) for (const v of Object.keys(variants)) counts.variants[v] = (counts.variants[v] ?? 0) + (variants[v] ?? 0);
  };

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

  const schedule = (): void => {
    if (closed || settings.metricsInterval === 0) return;
    const jitter = settings.metricsJitter > 0 ? Math.floor(Math.random() * settings.metricsJitter) : 0;
    const backoff = Math.min(failures, 10) * settings.metricsInterval;
    timer = setTimeout(() => void flush().finally(schedule), settings.metricsInterval + backoff + jitter);
    timer.unref();
  };

  const send = async (): Promise<boolean> => {
    if (dropped > 0) {
      settings.logger.warn(`Usage report: counts of ${dropped} toggle name(s) dropped this period (more distinct names than a report holds)`);
      dropped = 0;
    }
    if (size + unknownSize === 0) return true;
    const sent = toggles;
    const start = bucketStart;
    toggles = Object.create(null);
    size = 0;
    unknownSize = 0;
    bucketStart = new Date();
    const body = {
      appName: settings.appName,
      instanceId: settings.instanceId,
      connectionId,
      bucket: { start, stop: new Date(), toggles: sent },
      platformName: 'node',
      platformVersion: process.versions.node,
      yggdrasilVersion: null,
      specVersion: SPEC_VERSION,
    };
    let ok = false;
    try {
      const status = await post(metricsUrl, body);
      ok = status >= 200 && status < 300;
      if (!ok) settings.logger.warn(`Usage report to ${metricsUrl.pathname} answered ${status}; kept for the next report`);
    } catch (error) {
      settings.logger.warn(`Usage report to ${metricsUrl.pathname} failed; kept for the next report`, error);
    }
    if (!ok) {
      // Put the counts back under the older start, ahead of anything counted meanwhile.
      bucketStart = start;
      for (const name of Object.keys(sent)) {
        const c = sent[name] as ToggleCounts;
        merge(name, c.yes, c.no, c.variants, 'restore');
      }
    }
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
    count(name, enabled, known) {
      const counts = entry(name, known);
      if (counts) counts[enabled ? 'yes' : 'no'] += 1;
    },
    add: merge,
    start() {
      if (closed || settings.metricsInterval === 0 || timer) return;
      const registration = {
        appName: settings.appName,
        instanceId: settings.instanceId,
        sdkVersion: SDK,
        strategies: settings.strategies,
        started,
        interval: settings.metricsInterval,
        connectionId,
        platformName: 'node',
        platformVersion: process.versions.node,
        yggdrasilVersion: null,
        specVersion: SPEC_VERSION,
      };
      registering = post(registerUrl, registration).then(
        (status) => {
          if (status < 200 || status >= 300) settings.logger.warn(`Registration upstream answered ${status}`);
        },
        (error) => settings.logger.warn('Registration upstream failed', error),
      );
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
          settings.logger.error(`Could not send the last usage report upstream; ${size + unknownSize} toggles' counts were lost`);
        }
      };
      // Destroying the connections under a registration still in flight would fail it (and log so).
      await Promise.all([registering, lastReport()]);
      for (const agent of agents.values()) agent?.destroy();
    },
    pending: () => toggles,
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
