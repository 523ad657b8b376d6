/**
 * A server component: reads the signed-in user from the session cookie, asks the proxy in process
 * (no HTTP), renders with the result, and hands the bootstrap to the client component.
 */
import { cookies } from 'next/headers';
import { DEMO_CLIENT_KEY, sessionUser } from '../../demo';
import { flags } from '../lib/flags';
import { FlagsPanel } from './flags-panel';

export const dynamic = 'force-dynamic';

export default async function Page({ searchParams }) {
  // `?bootstrap=off` starts the React SDK empty, as a page without SSR would: it flickers.
  const withBootstrap = (await searchParams).bootstrap !== 'off';
  const { proxy } = await flags();
  const user = sessionUser((await cookies()).toString());
  // The toggles, ETag and context the browser SDK starts with: what /api/flags/proxy answers it.
  const bootstrap = proxy.bootstrap({ userId: user?.id });
  // Rendered with the echoed context, whose sessionId the SDK will send too (gradual rollouts by
  // session then agree for users who are not signed in).
  const beta = proxy.isEnabled('demo.beta-testers', bootstrap.context);
  return (
    <main>
      <h1>Hello, {user?.name ?? 'stranger'}</h1>
      <p id="server-flag" className={beta ? 'on' : 'off'}>
        {beta ? 'You are a beta tester (server component)' : 'Not a beta tester (server component)'}
      </p>
      {/* A frontend key is public by design: every browser holds one. */}
      <FlagsPanel bootstrap={bootstrap} withBootstrap={withBootstrap} clientKey={process.env.FLAG_PROXY_CLIENT_KEY ?? DEMO_CLIENT_KEY} />
    </main>
  );
}
