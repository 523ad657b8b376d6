/** Fixtures of the OpenFeature (OFREP) tests: one flag of each kind the mapping tells apart, and an event-stream reader. */
import http from 'node:http';
import type { FeatureDefinition } from 'flag-proxy';
import { feature } from './harness.js';

const payloadVariant = (name: string, type: string, value: string) => ({ name, weight: 1000, stickiness: 'default', payload: { type, value } });

/** One flag of each kind the mapping distinguishes. */
export const OFREP_FEATURES: FeatureDefinition[] = [
  feature('bool-on'),
  feature('bool-off', { enabled: false }),
  feature('bool-users', { strategies: [{ name: 'userWithId', parameters: { userIds: 'alice' }, constraints: [] }] }),
  feature('text', { variants: [payloadVariant('blue', 'string', 'hello')] } as Partial<FeatureDefinition>),
  feature('count', { variants: [payloadVariant('five', 'number', '5')] } as Partial<FeatureDefinition>),
  feature('config', { variants: [payloadVariant('cfg', 'json', '{"a":1,"b":[true]}')] } as Partial<FeatureDefinition>),
  feature('text-off', { enabled: false, variants: [payloadVariant('blue', 'string', 'hello')] } as Partial<FeatureDefinition>),
  feature('bad-number', { variants: [payloadVariant('nan', 'number', 'many')] } as Partial<FeatureDefinition>),
  feature('plan-pro', {
    strategies: [{ name: 'default', parameters: {}, constraints: [{ contextName: 'plan', operator: 'IN', values: ['pro'] }] }],
  } as Partial<FeatureDefinition>),
];

/** Reads an event stream until `until` holds for what arrived, or `timeoutMs`. */
export function readStream(url: string, headers: Record<string, string>, until: (text: string) => boolean, timeoutMs = 5000) {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }>((resolve, reject) => {
    const req = http.get(url, { headers, agent: false }, (res) => {
      let text = '';
      const done = () => {
        clearTimeout(timer);
        req.destroy();
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text });
      };
      const timer = setTimeout(done, timeoutMs);
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
        if (until(text)) done();
      });
      res.on('end', done);
    });
    req.on('error', reject);
  });
}

