/**
 * The route table: every surface a proxy serves, in one place. A new wire protocol is a module
 * under `surfaces/` plus its line here.
 */
import type { FlagProxyConfig } from '../config/resolve.js';
import type { Surface } from '../core/route.js';
import { backstageSurface } from './backstage/index.js';
import { createClientApiSurface } from './client-api/index.js';
import { createDocsSurface } from './docs.js';
import { frontendSurface } from './frontend/index.js';
import { createOfrepSurface } from './ofrep/index.js';
import { createClientStreamingSurface } from './client-streaming/index.js';
import { unleashProxySurface } from './unleash-proxy/index.js';

/** The surfaces of one proxy, as its config turns them on. */
export function routeTable(config: FlagProxyConfig): Surface[] {
  const surfaces: Surface[] = [];
  // The docs come first, as the predecessor's came before everything else.
  if (config.enableOAS) surfaces.push(createDocsSurface(config));
  if (config.proxyApi) surfaces.push(unleashProxySurface);
  if (config.frontendApi) surfaces.push(frontendSurface);
  if (config.clientApi) surfaces.push(createClientApiSurface());
  if (config.backstageProbes) surfaces.push(backstageSurface);
  if (config.ofrepApi) surfaces.push(createOfrepSurface(config));
  if (config.clientStreaming) surfaces.push(createClientStreamingSurface());
  return surfaces;
}
