/** Options that shape what the proxy asks of, and tells, the upstream: asserted on what the test flag server sees. */
import type { IncomingMessage } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestFlagServer } from 'flag-proxy/testing';
import { createMemoryStorageProvider } from 'flag-proxy/testing';
import { eventually, feature, postJson, startHarness, type Harness, type TestResponse } from '../support/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('upstream requests', () => {
  it('sends projectName, namePrefix and tags as filters, and only the matching flags are served', async () => {
    const web = feature('web.a', { project: 'web' }) as never as Record<string, unknown>;
    web.tags = [{ type: 'team', value: 'blue' }];
    h = await startHarness({
      features: [web as never, feature('web.b', { project: 'other' }), feature('api.c', { project: 'web' })],
      options: { projectName: 'web', namePrefix: 'web.', tags: [{ name: 'team', value: 'blue' }] },
    });
    const fetch = h.upstream.requests.find((r) => r.path === '/api/client/features')!;
    expect(fetch.query.get('project')).toBe('web');
    expect(fetch.query.get('namePrefix')).toBe('web.');
    expect(fetch.query.getAll('tag')).toEqual(['team:blue']);
    expect((await (await h.request('/proxy')).json()).toggles.map((t: { name: string }) => t.name)).toEqual(['web.a']);
  });

  it('identifies itself with flagAppName, flagInstanceId and the upstream token', async () => {
    h = await startHarness({ features: [feature('a')], options: { flagAppName: 'my-proxy', flagInstanceId: 'instance-9', metricsInterval: 60_000 } });
    const fetch = h.upstream.requests.find((r) => r.path === '/api/client/features')!;
    expect(fetch.headers.authorization).toBe(h.upstream.token);
    expect(fetch.headers['unleash-appname']).toBe('my-proxy');
    expect(fetch.headers['unleash-instanceid']).toBe('instance-9');
    await eventually(() => expect(h!.upstream.registrations).toHaveLength(1));
    expect(h.upstream.registrations[0]).toMatchObject({ appName: 'my-proxy', instanceId: 'instance-9', interval: 60_000 });
    await h.request('/proxy', postJson({ toggles: ['a'] }));
    await h.proxy.close();
    expect(h.upstream.metrics[0]).toMatchObject({ appName: 'my-proxy', instanceId: 'instance-9' });
  });

  it('sends no usage report and no registration when metricsInterval is 0, until close', async () => {
    h = await startHarness({ features: [feature('a')], options: { metricsInterval: 0 } });
    await h.request('/proxy', postJson({ toggles: ['a'] }));
    await new Promise((r) => setTimeout(r, 150));
    expect(h.upstream.metrics).toHaveLength(0);
    expect(h.upstream.registrations).toHaveLength(0);
  });
});

describe('readiness without the upstream', () => {
  it('becomes ready from inline bootstrap data while the upstream is down', async () => {
    const upstream = await createTestFlagServer();
    upstream.setFault({ status: 503 });
    h = await startHarness({ upstream, noWait: true, options: { expBootstrap: { data: [feature('from-bootstrap')] } } });
    try {
      await h.proxy.ready;
      expect((await (await h.request('/proxy')).json()).toggles.map((t: { name: string }) => t.name)).toEqual(['from-bootstrap']);
    } finally {
      await h.close();
      h = undefined;
      await upstream.close();
    }
  });

  it('becomes ready from the storage provider backup while the upstream is down, and writes new flag sets to it', async () => {
    const storage = createMemoryStorageProvider({ 'flag-proxy': { version: 2, features: [feature('from-backup')] } });
    const upstream = await createTestFlagServer({ features: [feature('fresh')] });
    upstream.setFault({ status: 500 });
    h = await startHarness({ upstream, noWait: true, options: { storageProvider: storage } });
    try {
      await h.proxy.ready;
      expect((await (await h.request('/proxy')).json()).toggles.map((t: { name: string }) => t.name)).toEqual(['from-backup']);
      upstream.setFault(undefined);
      await eventually(async () => {
        expect((await (await h!.request('/proxy')).json()).toggles.map((t: { name: string }) => t.name)).toEqual(['fresh']);
      });
      expect(storage.saved.get('flag-proxy')?.features.map((f) => f.name)).toEqual(['fresh']);
    } finally {
      await h.close();
      h = undefined;
      await upstream.close();
    }
  });
});

describe('host-derived context (the context option)', () => {
  it('overrides what the caller sent, so a spoofed userId is replaced', async () => {
    h = await startHarness({
      features: [feature('only-7', { strategies: [{ name: 'userWithId', parameters: { userIds: '7' }, constraints: [] }] as never })],
      options: { context: (req) => ({ userId: String(req.headers['x-session-user'] ?? '') || undefined }) },
    });
    const spoofed = await h.request('/proxy?userId=7', { headers: { 'x-session-user': '8' } });
    expect((await spoofed.json()).toggles).toEqual([]);
    const real = await h.request('/proxy?userId=1', { headers: { 'x-session-user': '7' } });
    expect((await real.json()).toggles.map((t: { name: string }) => t.name)).toEqual(['only-7']);
  });
});

describe('host-derived context: every key the hook returns belongs to the host', () => {
  type SessionRequest = IncomingMessage & { session?: { userId?: string } };
  const forAlice = feature('for-alice', { strategies: [{ name: 'userWithId', parameters: { userIds: 'alice,42' }, constraints: [] }] as never });
  const on = async (res: TestResponse) => (await res.json()).toggles.filter((t: { enabled: boolean }) => t.enabled).map((t: { name: string }) => t.name);

  it("never lets an anonymous caller choose a userId with the README's session pattern", async () => {
    // Exactly the README's example: the session is missing for an anonymous caller, so the hook returns { userId: undefined }.
    h = await startHarness({ features: [forAlice], options: { enableAllEndpoint: true, context: (req) => ({ userId: (req as SessionRequest).session?.userId }) } });
    expect(await on(await h.request('/proxy?userId=alice'))).toEqual([]);
    expect(await on(await h.request('/proxy?properties[userId]=alice'))).toEqual([]);
    expect(await on(await h.request('/proxy', postJson({ context: { userId: 'alice' } })))).toEqual([]);
    expect(await on(await h.request('/proxy', postJson({ context: { userId: 'alice' }, toggles: ['for-alice'] })))).toEqual([]);
    expect(await on(await h.request('/proxy/all?userId=alice'))).toEqual([]);
  });

  it('gives numbers from the hook as strings, so a numeric id matches "42"', async () => {
    h = await startHarness({ features: [forAlice], options: { context: () => ({ userId: 42 as never }) } });
    expect(await on(await h.request('/proxy?userId=nobody'))).toEqual(['for-alice']);
  });

  it('answers 500 (masked) and logs the host bug when the hook returns an object for a field', async () => {
    const errors: string[] = [];
    const logger = { debug() {}, info() {}, warn() {}, fatal() {}, error: (m: string, ...a: unknown[]) => void errors.push([m, ...a.map(String)].join(' ')) };
    h = await startHarness({ features: [forAlice], options: { logger, context: () => ({ userId: { id: 'alice' } as never }) } });
    const res = await h.request('/proxy?userId=alice');
    expect(res.status).toBe(500);
    expect(await res.text()).not.toContain('alice');
    expect(errors.join('\n')).toContain('userId is an object');
  });
});
