'use client';
/**
 * A client component: `@unleash/proxy-client-react` started from the server's bootstrap, so its
 * first render (on the server, then hydrating in the browser) already has the user's flags, and
 * its first fetch answers the same toggles.
 */
import { FlagProvider, useFlag, useFlagsStatus } from '@unleash/proxy-client-react';
import { useEffect } from 'react';

const FLAGS = [
  { name: 'demo.welcome-banner', on: 'Welcome to the new look!', off: 'Welcome.' },
  { name: 'demo.beta-testers', on: 'Beta features: on', off: 'Beta features: off' },
  { name: 'demo.eu-only', on: 'EU offers: shown', off: 'EU offers: none' },
];

function Flag({ name, on, off }) {
  const enabled = useFlag(name);
  return (
    <li data-flag={name} className={enabled ? 'on' : 'off'}>
      {enabled ? on : off}
    </li>
  );
}

function SdkState() {
  const { flagsReady } = useFlagsStatus();
  return <span id="sdk-state">{flagsReady ? 'ready' : 'starting'}</span>;
}

/** @param {{ bootstrap: import('flag-proxy').FlagBootstrap, withBootstrap: boolean, clientKey: string }} props */
export function FlagsPanel({ bootstrap, withBootstrap, clientKey }) {
  const { appName, ...context } = bootstrap.context;
  // What the page started from, to look at in devtools (and for the example's browser test).
  useEffect(() => {
    window.flagsPanel = { bootstrap };
  }, [bootstrap]);
  const config = {
    // The server render needs an absolute URL too; it never fetches (the client starts in the browser).
    url: typeof window === 'undefined' ? 'http://localhost/api/flags/proxy' : new URL('/api/flags/proxy', window.location.href).href,
    clientKey,
    appName,
    context,
    bootstrap: withBootstrap ? bootstrap.toggles : undefined,
    bootstrapOverride: true,
    refreshInterval: 15,
  };
  return (
    <FlagProvider config={config}>
      <ul id="flags">
        {FLAGS.map((flag) => (
          <Flag key={flag.name} {...flag} />
        ))}
      </ul>
      <p>
        SDK: <SdkState />
      </p>
    </FlagProvider>
  );
}
