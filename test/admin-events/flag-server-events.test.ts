/** The test flag server records an admin event for every flag change a test makes, readable with the typed client. */
import { describe, expect, it, onTestFinished } from 'vitest';
import { createAdminEventsClient } from 'flag-proxy/admin-events';
import { createTestFlagServer, type TestFlagServer, type TestFlagServerOptions } from 'flag-proxy/testing';
import { feature } from '../support/harness.js';

/** A test flag server, closed when the test finishes. */
async function startFlagServer(options?: TestFlagServerOptions): Promise<TestFlagServer> {
  const server = await createTestFlagServer(options);
  onTestFinished(() => server.close());
  return server;
}

describe('createTestFlagServer admin events', () => {
  it('records created, updated, enabled, disabled and archived events, newest first', async () => {
    const server = await startFlagServer({ features: [feature('a', { project: 'web' })] });
    server.upsertFeature(feature('b'));
    server.setEnabled('a', false);
    server.setEnabled('a', true);
    server.upsertFeature(feature('b', { description: 'changed' }));
    server.removeFeature('b');
    const client = createAdminEventsClient({ flagUrl: server.url, adminToken: server.adminToken });
    const { events } = await client.list();
    expect(events.map((e) => [e.type, e.featureName])).toEqual([
      ['feature-archived', 'b'],
      ['feature-updated', 'b'],
      ['feature-environment-enabled', 'a'],
      ['feature-environment-disabled', 'a'],
      ['feature-created', 'b'],
      ['feature-created', 'a'],
    ]);
    expect(events[2]).toMatchObject({ project: 'web', environment: 'development' });
    expect(events[5]).toMatchObject({ project: 'web', environment: null });
    const history = await client.forToggle('a');
    expect(history.events).toHaveLength(3);
    expect((await client.list({ project: 'web' })).events).toHaveLength(3);
  });

  it('answers 401 without a token and 403 with a client token on the admin API', async () => {
    const server = await startFlagServer();
    expect((await fetch(`${server.origin}/api/admin/events`)).status).toBe(401);
    expect((await fetch(`${server.origin}/api/admin/events`, { headers: { authorization: server.token } })).status).toBe(403);
    await expect(createAdminEventsClient({ flagUrl: server.origin, adminToken: server.token }).list()).rejects.toMatchObject({ code: 'FORBIDDEN' });
  });
});
