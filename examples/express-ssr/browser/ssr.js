// The page's script: the Unleash browser SDK started from what the server rendered with, so its
// state is the page's from the start and its first fetch changes nothing.
//
// `bootstrap` + `bootstrapOverride: true`: the SDK is ready with the server's toggles before any
// request. The echoed `context` (with its sessionId and appName) makes its first fetch ask for
// exactly the answer the page was rendered from. Add `experimental: { togglesStorageTTL: 30 }`
// to skip that first fetch altogether (then the first poll comes after `refreshInterval`).
import { UnleashClient } from 'unleash-proxy-client';

const settings = document.querySelector('meta[name="flag-proxy"]').dataset;
const data = window.__FLAG_PROXY_BOOTSTRAP__;
const query = new URLSearchParams(location.search);
const { appName, ...context } = data.context;

const client = new UnleashClient({
  url: new URL(settings.proxy, location.href).href,
  clientKey: settings.key,
  appName,
  context,
  // `?bootstrap=off` starts the SDK empty, as a page without SSR would: it flickers.
  bootstrap: query.get('bootstrap') === 'off' ? undefined : data.toggles,
  bootstrapOverride: true,
  refreshInterval: Number(query.get('refresh') ?? 15),
  metricsInterval: 60,
});

/** Writes the flag-dependent parts from the SDK's state: only what differs, as a framework would. */
function render() {
  for (const item of document.querySelectorAll('[data-flag]')) {
    const enabled = client.isEnabled(item.dataset.flag);
    const text = enabled ? item.dataset.on : item.dataset.off;
    const state = enabled ? 'on' : 'off';
    if (item.textContent !== text) item.textContent = text;
    if (item.className !== state) item.className = state;
  }
}

const sdkState = document.getElementById('sdk-state');
client.on('ready', () => {
  render();
  sdkState.textContent = 'ready';
});
client.on('update', () => {
  render();
  sdkState.textContent = 'updated';
});
window.flagPage = { client };
// Render from the SDK's state at once, as a component would on mount: with the bootstrap this is
// the server's state (the constructor takes the toggles); without it, everything off.
render();
client.start();
