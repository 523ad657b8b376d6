/**
 * The public client specification (@unleash/client-specification, the version unleash-client 6
 * passes), driven through the proxy's HTTP interface: each spec state is served by the test flag
 * server, and every test and variant test is checked through `POST /proxy` with a `toggles` list.
 *
 * No case is excluded. Two adaptations, both about how the state or context reach the proxy:
 * - Specs 19 and 20 describe the upstream's delta API (hydration and events). The proxy fetches
 *   the full client API, so the test applies the events to get the state they describe and serves
 *   that; what is checked is the evaluation of that state through the proxy.
 * - The proxy, like its predecessor, fills a missing `remoteAddress` with the caller's IP. The spec
 *   expects "no address" for contexts without one, so requests arrive through a trusted proxy hop
 *   claiming 203.0.113.9 (TEST-NET-3), an address no spec list contains.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadClientSpecs, type SpecCase } from '../support/client-spec.js';
import { startHarness, postJson, type Harness } from '../support/harness.js';

for (const spec of loadClientSpecs()) {
  describe(`client specification ${spec.name}`, () => {
    let h: Harness;
    beforeAll(async () => {
      h = await startHarness({ features: spec.features, segments: spec.segments, options: { trustProxy: true } });
    });
    afterAll(() => h.close());

    const lookup = async (test: SpecCase) => {
      const res = await h.request('/proxy', postJson({ context: test.context, toggles: [test.toggleName] }, { 'x-forwarded-for': '203.0.113.9' }));
      expect(res.status).toBe(200);
      const body = (await res.json()) as { toggles: Array<{ name: string; enabled: boolean; variant: Record<string, unknown> }> };
      expect(body.toggles).toHaveLength(1);
      expect(body.toggles[0]?.name).toBe(test.toggleName);
      return body.toggles[0]!;
    };

    for (const test of spec.tests) {
      it(`${test.description}`, async () => {
        expect((await lookup(test)).enabled).toBe(test.expectedResult);
      });
    }
    for (const test of spec.variantTests) {
      it(`variant: ${test.description}`, async () => {
        const expected = test.expectedResult as Record<string, unknown>;
        const { variant } = await lookup(test);
        const actual: Record<string, unknown> = { name: variant.name, enabled: variant.enabled };
        if ('payload' in expected) actual.payload = variant.payload;
        if ('feature_enabled' in expected) actual.feature_enabled = variant.feature_enabled;
        if ('featureEnabled' in expected) actual.featureEnabled = variant.featureEnabled;
        expect(actual).toEqual(expected);
      });
    }
  });
}
