/** The test flag server records an admin event for every flag change a test makes, readable with the typed client. */
import { afterEach, describe, expect, it } from 'vitest';
import { createAdminEventsClient } from 'flag-proxy/admin-events';
import { createTestFlagServer, type TestFlagServer } from 'flag-proxy/testing';
import { feature } from '../support/harness.js';

let server: TestFlagServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('createTestFlagServer admin events', () => {
  it('records created, updated, enabled, disabled and archived events, newest first', async () => {
    server = await createTestFlagServer({ features: [feature('a', { project: 'web' })] });
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
    server = await createTestFlagServer();
    expect((await fetch(`${server.origin}/api/admin/events`)).status).toBe(401);
    expect((await fetch(`${server.origin}/api/admin/events`, { headers: { authorization: server.token } })).status).toBe(403);
    await expect(createAdminEventsClient({ flagUrl: server.origin, adminToken: server.token }).list()).rejects.toMatchObject({ code: 'FORBIDDEN' });
  });
});
