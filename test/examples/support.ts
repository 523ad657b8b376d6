/** What every example must answer, asserted the same way for each (the examples/README.md promises). */
import { expect } from 'vitest';
import { DEMO_CLIENT_KEY } from '../../examples/demo.js';

const names = async (res: Response): Promise<string[]> => {
  expect(res.status).toBe(200);
  return ((await res.json()) as { toggles: Array<{ name: string }> }).toggles.map((t) => t.name);
};

/** Calls an example running at `base` as its README describes, and checks every answer. */
export async function checkExample(base: string): Promise<void> {
  const key = { authorization: DEMO_CLIENT_KEY };
  // The app's own route, next to the proxy.
  expect(await (await fetch(`${base}/api/hello`, { headers: { cookie: 'session=alice' } })).json()).toEqual({ hello: 'Alice' });
  expect(await (await fetch(`${base}/api/hello`)).json()).toEqual({ hello: 'stranger' });
  // The proxy under /api/flags.
  const health = await fetch(`${base}/api/flags/proxy/health`);
  expect(health.status).toBe(200);
  expect(await health.text()).toBe('ok');
  expect((await fetch(`${base}/api/flags/proxy`)).status).toBe(401);
  expect(await names(await fetch(`${base}/api/flags/proxy?region=eu`, { headers: key }))).toEqual(['demo.welcome-banner', 'demo.eu-only']);
  // The userId is bound to the session: Bob (42) cannot claim to be user 1; Alice (1) needs no claim.
  expect(await names(await fetch(`${base}/api/flags/proxy?userId=1`, { headers: { ...key, cookie: 'session=bob' } }))).not.toContain('demo.beta-testers');
  expect(await names(await fetch(`${base}/api/flags/proxy?userId=99`, { headers: { ...key, cookie: 'session=alice' } }))).toContain('demo.beta-testers');
  // Paths that are neither the app's nor the proxy's stay the app's.
  expect((await fetch(`${base}/api/nope`)).status).toBe(404);
}
