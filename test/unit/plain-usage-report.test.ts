/**
 * Usage reports and registrations that skip the schema (`isPlainUsageReport`,
 * `isPlainRegistration`): whatever they accept, the schema must accept too and give back the same
 * fields and values, so skipping it changes nothing; and what real SDKs send must take them (else
 * zod loads in every proxy in front of a web app, or serving server SDKs).
 */
import { describe, expect, it } from 'vitest';
import { isPlainRegistration, isPlainUsageReport, MAX_METRIC_COUNT, requestSchemas } from '../../src/core/schemas.js';
import { createRandom } from '../../bench/flags.js';
import { canonical } from '../support/canonical.js';

const DATES = ['2026-11-29T10:00:00.000Z', '2026-11-29T10:00:00Z', '2026-11-29 10:00', '2026-11-29T10:00:00+01:00', '2026-13-45T99:00:00Z', '2026-11-29', 'yesterday', ''];
const COUNTS: unknown[] = [0, -0, 1, 19, MAX_METRIC_COUNT, MAX_METRIC_COUNT + 1, -1, 1.5, Number.NaN, '3', null, true, 2 ** 53];

function pick<T>(next: () => number, list: readonly T[]): T {
  return list[Math.floor(next() * list.length)] as T;
}

/** Gives `object` an own `__proto__` field, as JSON.parse does for a body that has one. */
function withProtoField(next: () => number, object: Record<string, unknown>): void {
  if (next() < 0.03) Object.defineProperty(object, '__proto__', { value: pick(next, [1, { yes: 1 }, null]), enumerable: true, writable: true, configurable: true });
}

/** A value that is now and then not what the field takes. */
function odd(next: () => number): unknown {
  return pick(next, [undefined, null, 1, 'x', [], {}, true]);
}

function countsOf(next: () => number): unknown {
  if (next() < 0.05) return odd(next);
  const out: Record<string, unknown> = {};
  if (next() < 0.9) out.yes = pick(next, COUNTS.slice(0, next() < 0.8 ? 4 : COUNTS.length));
  if (next() < 0.9) out.no = pick(next, COUNTS.slice(0, next() < 0.8 ? 4 : COUNTS.length));
  if (next() < 0.7) {
    const variants: Record<string, unknown> = {};
    for (let i = Math.floor(next() * 3); i > 0; i--) variants[pick(next, ['blue', 'red', 'disabled', '__proto__'])] = pick(next, COUNTS.slice(0, next() < 0.8 ? 4 : COUNTS.length));
    out.variants = next() < 0.05 ? odd(next) : variants;
  }
  if (next() < 0.1) out.extra = 'kept';
  withProtoField(next, out);
  return out;
}

function reportOf(next: () => number): Record<string, unknown> {
  const toggles: Record<string, unknown> = {};
  for (let i = Math.floor(next() * 4); i > 0; i--) toggles[pick(next, ['a', 'b', 'c', 'with space', ''])] = countsOf(next);
  const bucket: Record<string, unknown> = {
    start: next() < 0.85 ? DATES[0] : pick(next, DATES),
    stop: next() < 0.85 ? DATES[1] : pick(next, DATES),
    toggles: next() < 0.05 ? odd(next) : toggles,
  };
  if (next() < 0.05) delete bucket[pick(next, ['start', 'stop', 'toggles'])];
  withProtoField(next, bucket);
  const report: Record<string, unknown> = { appName: 'web', instanceId: 'browser', bucket: next() < 0.03 ? odd(next) : bucket };
  if (next() < 0.3) report.environment = next() < 0.8 ? 'production' : odd(next);
  if (next() < 0.5) report.impactMetrics = [];
  if (next() < 0.2) report.connectionId = 'c-1';
  if (next() < 0.05) report.appName = odd(next);
  if (next() < 0.05) report.instanceId = odd(next);
  if (next() < 0.03) delete report[pick(next, ['appName', 'instanceId', 'bucket'])];
  withProtoField(next, report);
  return report;
}

/**
 * Runs `count` generated bodies through JSON (as a request body arrives: no undefined fields, an
 * own `__proto__` field kept) and asserts that each one `isPlain` accepts the schema passes
 * unchanged; returns how many it accepted and how many the schema passed unchanged.
 */
function againstSchema(
  schema: { safeParse(value: unknown): { success: boolean; data?: unknown } },
  isPlain: (value: unknown) => boolean,
  generate: () => unknown,
  count: number,
): { plain: number; valid: number } {
  let plain = 0;
  let valid = 0;
  for (let i = 0; i < count; i += 1) {
    const body = JSON.parse(JSON.stringify(generate())) as unknown;
    const checked = schema.safeParse(body);
    const unchanged = checked.success && canonical(checked.data) === canonical(body);
    if (unchanged) valid += 1;
    if (isPlain(body)) {
      plain += 1;
      expect(unchanged, JSON.stringify(body)).toBe(true);
    }
  }
  return { plain, valid };
}

describe('usage reports that skip the schema', () => {
  it('are exactly those the schema passes unchanged, over a generated corpus', () => {
    const next = createRandom(11);
    const { plain, valid } = againstSchema(requestSchemas().clientMetricsSchema, isPlainUsageReport, () => reportOf(next), 20_000);
    // Both answers occur, and the check leaves to the schema nothing it passes unchanged.
    expect(plain).toBeGreaterThan(5000);
    expect(plain).toBeLessThan(19_000);
    expect(plain).toBe(valid);
  });

  it('accept what unleash-proxy-client and unleash-client send, and leave to the schema what it refuses', () => {
    const browser = {
      bucket: { start: '2026-11-29T10:00:00.000Z', stop: '2026-11-29T10:00:30.000Z', toggles: { a: { yes: 3, no: 0, variants: { blue: 3 } }, b: { yes: 0, no: 1, variants: {} } } },
      appName: 'web',
      instanceId: 'browser',
      impactMetrics: [],
    };
    expect(isPlainUsageReport(browser)).toBe(true);
    const server = {
      appName: 'api',
      instanceId: 'api-1',
      connectionId: '6f1c2f1e-8d2a-4c77-9a59-0c2b1f0e9d41',
      environment: 'production',
      platformName: 'node',
      platformVersion: '20.20.2',
      yggdrasilVersion: null,
      specVersion: '5.2.0',
      bucket: { start: '2026-11-29T10:00:00.000Z', stop: '2026-11-29T10:01:00.000Z', toggles: { a: { yes: 120, no: 7, variants: {} } } },
    };
    expect(isPlainUsageReport(server)).toBe(true);
    expect(isPlainUsageReport({ ...browser, bucket: { ...browser.bucket, toggles: {} } })).toBe(true);
    expect(isPlainUsageReport({ ...browser, bucket: { ...browser.bucket, start: 'yesterday' } })).toBe(false);
    expect(isPlainUsageReport({ ...browser, bucket: { ...browser.bucket, toggles: { a: { yes: -1 } } } })).toBe(false);
    expect(isPlainUsageReport({ ...browser, bucket: { ...browser.bucket, toggles: { a: { yes: 1.5 } } } })).toBe(false);
    expect(isPlainUsageReport({ ...browser, bucket: { ...browser.bucket, toggles: { a: { variants: { blue: MAX_METRIC_COUNT + 1 } } } } })).toBe(false);
    expect(isPlainUsageReport({ ...browser, appName: 7 })).toBe(false);
    expect(isPlainUsageReport({ ...browser, bucket: undefined })).toBe(false);
    expect(isPlainUsageReport([])).toBe(false);
    expect(isPlainUsageReport(undefined)).toBe(false);
  });
});

function registrationOf(next: () => number): Record<string, unknown> {
  const registration: Record<string, unknown> = {
    appName: next() < 0.95 ? 'api' : odd(next),
    strategies: next() < 0.9 ? pick(next, [[], ['default'], ['default', 'flexibleRollout']]) : pick(next, [odd(next), ['default', 1], 'default']),
    started: next() < 0.8 ? pick(next, DATES) : pick(next, [Date.UTC(2026, 10, 29), 1.5, -3, '1764410400000', odd(next)]),
    interval: next() < 0.9 ? pick(next, [15000, 60000, 0, 1.5]) : odd(next),
  };
  if (next() < 0.6) registration.instanceId = next() < 0.9 ? 'api-1' : odd(next);
  if (next() < 0.6) registration.sdkVersion = next() < 0.9 ? 'unleash-client-node:6.12.1' : odd(next);
  if (next() < 0.3) registration.platformName = 'node';
  if (next() < 0.05) delete registration[pick(next, ['appName', 'strategies', 'started', 'interval'])];
  withProtoField(next, registration);
  return registration;
}

describe('registrations that skip the schema', () => {
  it('are exactly those the schema passes unchanged, over a generated corpus', () => {
    const next = createRandom(13);
    const { plain, valid } = againstSchema(requestSchemas().registerSchema, isPlainRegistration, () => registrationOf(next), 10_000);
    expect(plain).toBeGreaterThan(2000);
    expect(plain).toBeLessThan(9_000);
    expect(plain).toBe(valid);
  });

  it('accept what unleash-client sends, and leave to the schema what it refuses', () => {
    const sdk = { appName: 'api', instanceId: 'api-1', sdkVersion: 'unleash-client-node:6.12.1', strategies: ['default'], started: '2026-11-29T10:00:00.000Z', interval: 60000 };
    expect(isPlainRegistration(sdk)).toBe(true);
    expect(isPlainRegistration({ ...sdk, started: Date.UTC(2026, 10, 29) })).toBe(true);
    expect(isPlainRegistration({ ...sdk, started: 'yesterday' })).toBe(false);
    expect(isPlainRegistration({ ...sdk, strategies: ['default', 1] })).toBe(false);
    expect(isPlainRegistration({ ...sdk, interval: '60000' })).toBe(false);
    expect(isPlainRegistration({ ...sdk, appName: undefined })).toBe(false);
    expect(isPlainRegistration(null)).toBe(false);
  });
});
