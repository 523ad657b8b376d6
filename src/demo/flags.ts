import type { FeatureDefinition } from '../evaluation/types.js';

/** The sample flags the embedded demo flag server starts with. */
export const demoFlags: FeatureDefinition[] = [
  {
    name: 'demo.welcome-banner',
    description: 'On for everyone',
    enabled: true,
    impressionData: false,
    strategies: [{ name: 'default', parameters: {}, constraints: [] }],
    variants: [],
  },
  {
    name: 'demo.gradual-rollout',
    description: 'On for half of the users, sticky by userId',
    enabled: true,
    impressionData: false,
    strategies: [
      {
        name: 'flexibleRollout',
        parameters: { rollout: '50', stickiness: 'userId', groupId: 'demo.gradual-rollout' },
        constraints: [],
      },
    ],
    variants: [],
  },
  {
    name: 'demo.beta-testers',
    description: 'On for the users with id 1, 2 or 3',
    enabled: true,
    impressionData: true,
    strategies: [{ name: 'userWithId', parameters: { userIds: '1,2,3' }, constraints: [] }],
    variants: [],
  },
  {
    name: 'demo.eu-only',
    description: 'On when the property region is eu',
    enabled: true,
    impressionData: false,
    strategies: [
      {
        name: 'default',
        parameters: {},
        constraints: [{ contextName: 'region', operator: 'IN' as never, values: ['eu'], inverted: false, caseInsensitive: true }],
      },
    ],
    variants: [],
  },
  {
    name: 'demo.checkout-button',
    description: 'A/B test with payloads, split by userId',
    enabled: true,
    impressionData: false,
    strategies: [{ name: 'default', parameters: {}, constraints: [] }],
    variants: [
      { name: 'green', weight: 500, stickiness: 'userId', payload: { type: 'json' as never, value: '{"color":"#2e7d32","label":"Buy now"}' } },
      { name: 'blue', weight: 500, stickiness: 'userId', payload: { type: 'string' as never, value: 'Checkout' } },
    ],
  },
  {
    name: 'demo.switched-off',
    description: 'Off everywhere',
    enabled: false,
    impressionData: false,
    strategies: [{ name: 'default', parameters: {}, constraints: [] }],
    variants: [],
  },
];

/** The client key and upstream token the demo uses. Demo only: never use them elsewhere. */
export const DEMO_CLIENT_KEY = 'demo-client-key-not-secret';
export const DEMO_UPSTREAM_TOKEN = 'demo-upstream-token';
