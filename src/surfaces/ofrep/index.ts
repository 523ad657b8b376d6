/**
 * OpenFeature's remote evaluation protocol (OFREP 0.3) over the proxy's flags: one flag or all of
 * them for an evaluation context, and the event stream that tells browser providers when to fetch
 * again. The mapping from Unleash flags to OpenFeature values is in `mapping.ts`
 * (docs/openfeature.md has the table).
 */
import type { FlagProxyConfig } from '../../config/resolve.js';
import type { Route, Surface } from '../../core/route.js';
import type { EvaluationService } from '../../core/service.js';
import { bulkRoute, singleRoute, type OfrepState } from './evaluate.js';
import { createFlagConfigTracker } from './flag-config.js';
import { streamRoute } from './stream.js';
import { createStreamTokens } from './stream-token.js';

/**
 * Resolves after the next flag-set change or date-constraint instant (either may be what a refetch
 * names: a proxy whose clock lags its fleet's by a moment reaches the instant just after), or after `ms`.
 */
function nextChange(service: EvaluationService, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      off();
      clearTimeout(timer);
      resolve();
    };
    const off = service.onAnswersChange(done);
    const timer = setTimeout(done, ms);
    timer.unref();
  });
}

/** The OFREP routes of one proxy. */
export function createOfrepSurface(config: FlagProxyConfig): Surface {
  const state: OfrepState = {
    tokens: createStreamTokens({ apiToken: config.flagApiToken, clientKeys: config.clientKeys }),
    flagConfig: createFlagConfigTracker(),
    nextChange,
  };
  const routes: Route[] = [
    { path: '/ofrep/v1/evaluate/flags', methods: ['POST'], handle: bulkRoute(state) },
    { path: '/ofrep/v1/evaluate/flags/:key', methods: ['POST'], label: '/ofrep/v1/evaluate/flags/{key}', handle: singleRoute },
    { path: '/ofrep/v1/sse', methods: ['GET'], handle: streamRoute(state) },
  ];
  return { name: 'ofrep', prefixes: ['/ofrep'], routes };
}
