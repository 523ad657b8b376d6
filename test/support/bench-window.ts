/**
 * A measured window of `npm run bench` (bench/report.ts's `Measurement`) for the report's tests:
 * `answered` responses of `status` in 3 s with 16 still in flight, the rest as a busy target's
 * window reads; any field can be given.
 */
import type { Measurement } from '../../bench/report.js';

type Given = Pick<Measurement, 'flags' | 'scenario' | 'target' | 'round' | 'cpuUsPerRequest'> & Partial<Measurement> & { answered: number; status: number };

export function benchWindow({ answered, status, ...given }: Given): Measurement {
  return {
    count: answered,
    inFlight: 16,
    seconds: 3,
    rps: answered / 3,
    p50: answered ? 1 : Number.NaN,
    p99: answered ? 5 : Number.NaN,
    cpuBusy: 0.99,
    runnerBusy: 0.5,
    peakRssBytes: 70 * 2 ** 20,
    heapBytesPerRequest: 9000,
    liveHeapBytes: 9 * 2 ** 20,
    statuses: answered ? { [status]: answered } : {},
    errors: 0,
    unexpected: 0,
    ...given,
  };
}
