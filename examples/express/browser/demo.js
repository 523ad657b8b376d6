// Browser code for GET /: shows the flags the proxy answers for the context in the form, through
// the SDK. It reads toggles with getAllToggles(), which counts no usage: opening the page adds
// nothing to the usage reports.
import { EVENTS, InMemoryStorageProvider, UnleashClient } from 'unleash-proxy-client';
import { pageSettings, seconds } from './settings.js';

const { query, url, clientKey } = pageSettings();
const $ = (id) => document.getElementById(id);
const form = $('context');
const status = $('status');
const body = $('flags').tBodies[0];
// The proxy's path when it is this page's own, else its whole URL.
$('proxy-url').textContent = new URL(url).origin === location.origin ? new URL(url).pathname : url;
$('userId').value = query.get('userId') ?? '';
$('region').value = query.get('region') ?? '';

/** The context the form describes. */
function formContext() {
  const userId = $('userId').value.trim();
  const region = $('region').value;
  return { ...(userId ? { userId } : {}), properties: region ? { region } : {} };
}

/** Every flag name seen on this page, so that a flag that turns off is listed as off. */
const seen = new Set();

function cell(text, className) {
  const td = document.createElement('td');
  if (className) td.className = className;
  td.textContent = text;
  return td;
}

function payloadCell(payload) {
  const td = document.createElement('td');
  td.className = 'payload';
  if (payload) {
    const code = document.createElement('code');
    code.textContent = `${payload.type}: ${payload.value}`;
    td.append(code);
  } else td.textContent = '–';
  return td;
}

function render() {
  const on = new Map(client.getAllToggles().map((toggle) => [toggle.name, toggle]));
  for (const name of on.keys()) seen.add(name);
  const rows = [...seen].sort().map((name) => {
    const toggle = on.get(name);
    const row = document.createElement('tr');
    row.dataset.flag = name;
    row.dataset.state = toggle?.enabled ? 'on' : 'off';
    const variant = toggle?.variant;
    row.append(
      cell(name),
      cell(toggle?.enabled ? 'on' : 'off', `state ${toggle?.enabled ? 'on' : 'off'}`),
      cell(variant && variant.name !== 'disabled' ? variant.name : '–'),
      payloadCell(variant?.enabled ? variant.payload : undefined),
    );
    return row;
  });
  if (rows.length === 0) rows.push(Object.assign(document.createElement('tr'), { id: 'empty', innerHTML: '<td colspan="4">No flag is on for this context.</td>' }));
  body.replaceChildren(...rows);
}

function showStatus(text, error = false) {
  status.textContent = text;
  status.classList.toggle('error', error);
}

/** The SDK's error event as a sentence. */
function describeError(detail) {
  if (detail?.type === 'HttpError') {
    const hint = detail.code === 401 ? ' (check the client key)' : detail.code === 503 ? ' (the proxy is not ready yet)' : '';
    return `The proxy answered ${detail.code}${hint}.`;
  }
  return `Cannot reach the proxy: ${detail?.error?.message ?? detail?.message ?? detail}.`;
}

const refresh = seconds(query, 'refresh', 5);
let client;
try {
  client = new UnleashClient({
    url,
    clientKey,
    appName: 'flag-proxy-demo-page',
    refreshInterval: refresh,
    storageProvider: new InMemoryStorageProvider(),
    context: formContext(),
  });
} catch (error) {
  showStatus(`Cannot start the SDK: ${error.message}`, true);
  throw error;
}

/** One line on what the table shows. */
function summary() {
  const { userId, properties } = client.getContext();
  const who = `userId ${userId ?? '(none)'}${properties?.region ? `, region ${properties.region}` : ''}`;
  const on = client.getAllToggles().length;
  return `${on} ${on === 1 ? 'flag' : 'flags'} on for ${who} · updated ${new Date().toLocaleTimeString()} · refreshes every ${refresh} s`;
}

for (const name of [EVENTS.READY, EVENTS.UPDATE, EVENTS.RECOVERED]) {
  client.on(name, () => {
    render();
    showStatus(summary());
  });
}
client.on(EVENTS.ERROR, (detail) => showStatus(describeError(detail), true));

form.addEventListener('submit', async (event) => {
  event.preventDefault();
  showStatus('Asking the proxy…');
  const context = formContext();
  const next = new URLSearchParams(query);
  for (const [key, value] of [['userId', context.userId], ['region', context.properties.region]]) {
    if (value) next.set(key, value);
    else next.delete(key);
  }
  history.replaceState(null, '', `?${next}`);
  // An answer equal to the last one comes back 304 (its ETag matches) and emits no update: render anyway.
  await client.updateContext(context);
  render();
  if (!client.getError()) showStatus(summary());
});

window.flagDemo = { client };
client.start();
