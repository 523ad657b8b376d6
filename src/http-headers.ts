/**
 * Header helpers shared by the core and the modules built over it (stateless; node:http types
 * only).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Appends a field to `Vary`, keeping what is there. */
export function addVary(res: ServerResponse, field: string): void {
  const current = res.getHeader('vary');
  if (current === undefined) {
    res.setHeader('Vary', field);
    return;
  }
  const list = String(current);
  if (!list.split(',').some((f) => f.trim().toLowerCase() === field.toLowerCase())) res.setHeader('Vary', `${list}, ${field}`);
}

/** Whether `Accept-Encoding` accepts `encoding` (or `*`) with a q-value above 0. */
export function acceptsEncoding(req: IncomingMessage, encoding: string): boolean {
  const header = req.headers['accept-encoding'];
  if (typeof header !== 'string') return false;
  for (const part of header.split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    if (name !== encoding && name !== '*') continue;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  }
  return false;
}

/**
 * The key an OpenFeature (OFREP) request presents: `X-API-Key`, else `Authorization: Bearer
 * <key>`, else the proxy's own key header (`keyHeader`, lower case) as `/proxy` reads it.
 */
export function ofrepKeyOf(req: IncomingMessage, keyHeader: string): string | undefined {
  const apiKey = req.headers['x-api-key'];
  if (typeof apiKey === 'string' && apiKey !== '') return apiKey;
  const authorization = req.headers.authorization;
  if (typeof authorization === 'string' && /^bearer\s/i.test(authorization)) return authorization.slice(7).trim();
  const own = req.headers[keyHeader];
  return typeof own === 'string' ? own : undefined;
}
