/**
 * `metricsInterval` and `metricsJitter` as the upstream sees them: the registration's `interval`,
 * the `unleash-interval` header, and the spacing of the usage reports it receives.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { feature, postJson, startHarness, type Harness } from '../support/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** Keeps usage flowing (a named lookup every 40 ms) for `ms`, so every period has counts to report. */
async function generateUsage(harness: Harness, ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    await harness.request('/proxy', postJson({ toggles: ['counted'] }));
    await new Promise((r) => setTimeout(r, 40));
  }
}

/** Milliseconds between the usage reports the upstream received. */
function gaps(harness: Harness): number[] {
  const times = harness.upstream.requests.filter((r) => r.path === '/api/client/metrics').map((r) => r.receivedAt);
  return times.slice(1).map((t, i) => t - (times[i] as number));
}

describe('metricsInterval and metricsJitter, seen upstream', () => {
  it('registers with the interval, sends it as unleash-interval, and spaces reports by it', async () => {
    h = await startHarness({ features: [feature('counted')], options: { metricsInterval: 300, metricsJitter: 0, flagAppName: 'timed-proxy' } });
    await generateUsage(h, 1700);
    expect(h.upstream.registrations).toHaveLength(1);
    expect(h.upstream.registrations[0]).toMatchObject({ appName: 'timed-proxy', interval: 300 });
    const reports = h.upstream.requests.filter((r) => r.path === '/api/client/metrics');
    expect(reports.length).toBeGreaterThanOrEqual(3);
    expect(reports.every((r) => r.headers['unleash-interval'] === '300')).toBe(true);
    for (const gap of gaps(h)) {
      expect(gap).toBeGreaterThanOrEqual(280);
      expect(gap).toBeLessThan(300 + 400);
    }
  });

  it('adds a random delay of up to metricsJitter to each period', async () => {
    h = await startHarness({ features: [feature('counted')], options: { metricsInterval: 150, metricsJitter: 300 } });
    await generateUsage(h, 2600);
    const spacing = gaps(h);
    expect(spacing.length).toBeGreaterThanOrEqual(4);
    for (const gap of spacing) {
      expect(gap).toBeGreaterThanOrEqual(130);
      expect(gap).toBeLessThan(150 + 300 + 400);
    }
    // Uniform jitter over 300 ms: gaps this many and all within 20 ms of each other would be a fluke.
    expect(Math.max(...spacing) - Math.min(...spacing)).toBeGreaterThan(20);
  });
});
