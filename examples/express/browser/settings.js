// Browser code (bundled by pages.ts with esbuild): what both pages read from the server's JSON
// island and from their own query string.

/** Where the SDK connects, with which key, and the page's query. */
export function pageSettings() {
  const config = JSON.parse(document.getElementById('page-config').textContent);
  const query = new URLSearchParams(location.search);
  const other = query.get('proxy');
  return {
    query,
    // The SDK needs an absolute URL.
    url: other ? new URL(other, location.href).href : new URL(config.proxyPath, location.href).href,
    // Another proxy never gets this app's own key: `?key=`, else the demo key.
    clientKey: other ? query.get('key') || config.demoKey : query.get('key') || config.clientKey,
  };
}

/** A query parameter in seconds (fractions allowed), or `fallback`. */
export function seconds(query, name, fallback) {
  const value = Number(query.get(name));
  return query.has(name) && Number.isFinite(value) && value >= 0 ? value : fallback;
}

/** An SDK event's detail as plain JSON (errors become `{ name, message }`). */
export function plain(detail) {
  if (detail === undefined) return null;
  const errors = (_key, value) => (value instanceof Error ? { name: value.name, message: value.message } : value);
  try {
    return JSON.parse(JSON.stringify(detail instanceof Error ? errors('', detail) : detail, errors));
  } catch {
    return String(detail);
  }
}
