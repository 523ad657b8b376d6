/**
 * bench/README.md's scenario table says what every row of the benchmark measures: it lists each
 * scenario `npm run bench` runs (a polling one as `<name>@<n>`, one row per population), in the
 * order the report's tables use, and nothing else.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SCENARIO_NAMES } from '../../bench/options.js';
import { POLLING, SCENARIOS } from '../../bench/scenarios.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** The first column of the table headed `| scenario | what it stands for |`. */
function documentedScenarios(): string[] {
  const lines = readFileSync(path.join(root, 'bench/README.md'), 'utf8').split('\n');
  const start = lines.findIndex((line) => line.startsWith('| scenario | what it stands for |'));
  expect(start).toBeGreaterThan(-1);
  const rows: string[] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('| `')) break;
    rows.push(/^\| `([^`]+)`/.exec(line)?.[1] ?? '');
  }
  return rows;
}

describe("bench/README.md's scenario table", () => {
  it('lists every scenario, in the order the report runs them, and no other', () => {
    const expected = SCENARIOS.map((scenario) => (POLLING.includes(scenario.name) ? `${scenario.name}@<n>` : scenario.name));
    expect(documentedScenarios()).toEqual(expected);
  });

  it('and every scenario the options accept is one the bench defines', () => {
    expect([...SCENARIO_NAMES].sort()).toEqual(SCENARIOS.map((scenario) => scenario.name).sort());
  });
});
