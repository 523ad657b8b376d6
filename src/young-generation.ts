/**
 * The CLI's cap on V8's young generation. Under sustained load V8 doubles the young generation
 * each time enough survives its collections, up to two 16 MiB semi-spaces: 32 MB of RSS that Node
 * does not give back, in every server; loading a large flag set alone takes it there. V8 reads its
 * growth factor at each doubling, so a factor of 1 holds the young generation at the size it has.
 *
 * The CLI holds it at its initial size while it starts (module loading and the first flag set are
 * synchronous bursts, which would double it more than once before anything could look), then, once
 * the proxy is ready, lets it grow until it reaches the cap and holds it there. Measured with the
 * benchmark's CLI rows, a 16 MiB cap lowered peak RSS from 100–102 to 84–86 MB at 200 flags and
 * from 150–153 to 127–129 MB at 5000, at the same CPU per request; the default 8 MiB cap another
 * 7–11 MB, for about 1% more CPU in young collections (docs/performance.md, "Memory").
 *
 * This changes V8's settings for the whole process, so only the CLI, which owns its process, does
 * it: the library never does.
 */
import { PerformanceObserver } from 'node:perf_hooks';
import v8 from 'node:v8';

/** V8's own growth factor (it never starts below 2). */
const DEFAULT_GROWTH_FACTOR = 2;

/** Bytes V8's young generation (its new space) holds now. */
export function youngGenerationBytes(): number {
  return v8.getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.space_size ?? 0;
}

function growthFactor(factor: number): void {
  v8.setFlagsFromString(`--semi-space-growth-factor=${factor}`);
}

/** Holds the young generation at the size it has, until {@link capYoungGeneration}. */
export function holdYoungGeneration(): void {
  growthFactor(1);
}

/**
 * Lets the young generation grow, as V8 would, until it holds `maxBytes` or more (checked after
 * every collection), then holds it there and stops watching.
 */
export function capYoungGeneration(maxBytes: number): void {
  const reached = (): boolean => youngGenerationBytes() >= maxBytes;
  if (reached()) return holdYoungGeneration();
  growthFactor(DEFAULT_GROWTH_FACTOR);
  const observer = new PerformanceObserver(() => {
    if (!reached()) return;
    holdYoungGeneration();
    observer.disconnect();
  });
  observer.observe({ entryTypes: ['gc'] });
}
