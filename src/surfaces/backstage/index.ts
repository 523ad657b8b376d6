/**
 * Unleash Edge's probe paths, so container probes written for Edge keep working:
 * `GET /internal-backstage/health` (liveness: `{"status":"OK"}` while the process serves) and
 * `GET /internal-backstage/ready` (readiness: `{"status":"READY"}` once a flag set is loaded, 503
 * `{"error": …, "status":"NOTREADY"}` before that and once closing). No key, as on Edge.
 */
import { APPLICATION_JSON, type ProxyResponse } from '../../core/http.js';
import { NOT_READY_MESSAGE } from '../../core/parts.js';
import type { Route, Surface } from '../../core/route.js';

/** A probe answer: never cached, never compared by ETag. */
function probe(status: number, body: Record<string, string>): ProxyResponse {
  return Object.freeze({
    status,
    headers: Object.freeze({ 'Content-Type': APPLICATION_JSON, 'Cache-Control': 'no-store' }),
    body: JSON.stringify(body),
    etag: false as const,
  });
}

const OK = probe(200, { status: 'OK' });
const READY = probe(200, { status: 'READY' });
const NOT_READY = probe(503, { error: NOT_READY_MESSAGE, status: 'NOTREADY' });

const READ = ['GET', 'HEAD'] as const;

const routes: Route[] = [
  { path: '/internal-backstage/health', methods: READ, handle: () => OK },
  { path: '/internal-backstage/ready', methods: READ, handle: (service) => (service.isReady() ? READY : NOT_READY) },
];

/** Edge's health and readiness probes. */
export const backstageSurface: Surface = { name: 'backstage', prefixes: ['/internal-backstage'], routes };
