// Browser code for GET /sdk: starts the SDK from the query's settings, and keeps every event it
// emits in `sdkPage.events` (the browser tests read them; so can you, in devtools).
import { EVENTS, InMemoryStorageProvider, UnleashClient } from 'unleash-proxy-client';
import { pageSettings, plain, seconds } from './settings.js';

const { query, url, clientKey } = pageSettings();
const userId = query.get('userId');
const client = new UnleashClient({
  url,
  clientKey,
  appName: query.get('appName') || 'flag-proxy-sdk-page',
  refreshInterval: seconds(query, 'refresh', 15),
  metricsInterval: seconds(query, 'metrics', 30),
  metricsIntervalInitial: seconds(query, 'metricsInitial', 2),
  // Every load starts empty: no toggles carried over from an earlier visit in localStorage.
  storageProvider: new InMemoryStorageProvider(),
  context: userId ? { userId } : {},
});

const events = [];
const state = document.getElementById('state');
const toggles = document.getElementById('toggles');
document.getElementById('url').textContent = url;

function show(name) {
  if (name === EVENTS.ERROR) state.textContent = 'error';
  else if (name === EVENTS.READY || name === EVENTS.RECOVERED) state.textContent = 'ready';
  toggles.textContent = JSON.stringify(client.getAllToggles(), null, 2);
}

for (const name of [EVENTS.INIT, EVENTS.READY, EVENTS.UPDATE, EVENTS.ERROR, EVENTS.RECOVERED, EVENTS.SENT]) {
  client.on(name, (detail) => {
    events.push({ name, at: Date.now(), detail: plain(detail) });
    show(name);
  });
}

window.sdkPage = { client, events, url };
client.start();
