/**
 * The benchmark's chart: req/s and CPU µs per request for every row of the report (scenario, and
 * population for polling) and every target, as horizontal bars on two logarithmic axes (the
 * figures span four orders of magnitude). Hand-written SVG, no dependency; `npm run bench` writes
 * it to docs/bench.svg, which README.md shows beside the table.
 */
import type { InProcessResult } from './in-process.js';
import type { TargetName } from './options.js';
import { cellKey, rowsAt, summarize, TARGET_LABEL, type Measurement, type ReportMeta } from './report.js';

const COLORS: Record<TargetName, string> = { 'flag-proxy': '#2563eb', 'unleash-proxy': '#d97706', 'bare-node': '#9ca3af' };

const LABEL_WIDTH = 150;
const PANEL_WIDTH = 330;
const PANEL_GAP = 70;
const BAR = 9;
const BAR_GAP = 2;
const ROW_GAP = 8;
const HEADING = 26;
const TOP = 78;

const escape = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const short = (n: number): string =>
  n >= 1e6 ? `${+(n / 1e6).toFixed(1)}M` : n >= 1e4 ? `${Math.round(n / 1e3)}k` : n >= 1e3 ? `${+(n / 1e3).toFixed(1)}k` : n >= 10 ? String(Math.round(n)) : n.toFixed(1);

/** Microseconds as µs below a millisecond, else as ms. */
const time = (us: number): string => (us < 1000 ? `${us < 10 ? us.toFixed(1) : Math.round(us)} µs` : `${+(us / 1000).toFixed(us < 10_000 ? 1 : 0)} ms`);

/** A logarithmic axis over whole decades covering every value. */
function logAxis(values: number[]): { from: number; to: number; x(value: number): number; ticks: number[] } {
  const finite = values.filter((v) => Number.isFinite(v) && v > 0);
  const from = Math.floor(Math.log10(Math.min(...finite, 10)));
  const to = Math.max(from + 1, Math.ceil(Math.log10(Math.max(...finite, 10))));
  return {
    from,
    to,
    x: (value) => (PANEL_WIDTH * (Math.log10(Math.max(value, 10 ** from)) - from)) / (to - from),
    ticks: Array.from({ length: to - from + 1 }, (_, i) => 10 ** (from + i)),
  };
}

export function renderChart(meta: ReportMeta, flagCounts: number[], targets: TargetName[], measurements: Measurement[], inProcess?: InProcessResult): string {
  const cells = summarize(measurements);
  const groups = flagCounts.map((flags) => ({ flags, rows: rowsAt(flags, meta.scenarios, measurements) })).filter((g) => g.rows.length > 0);
  const all = [...cells.values()];
  const rps = logAxis(all.map((c) => c.rps));
  const cpu = logAxis(all.map((c) => c.cpu));
  const rowHeight = targets.length * (BAR + BAR_GAP) + ROW_GAP;
  const height = TOP + groups.reduce((sum, g) => sum + HEADING + g.rows.length * rowHeight, 0) + 40 + (inProcess ? 20 : 0);
  const width = LABEL_WIDTH + 2 * PANEL_WIDTH + PANEL_GAP + 70;
  const panels = [
    { title: 'req/s (longer is better)', axis: rps, left: LABEL_WIDTH, value: (c: { rps: number }) => c.rps, text: short },
    { title: 'CPU per request (shorter is better)', axis: cpu, left: LABEL_WIDTH + PANEL_WIDTH + PANEL_GAP, value: (c: { cpu: number }) => c.cpu, text: time },
  ];
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, -apple-system, 'Segoe UI', sans-serif" font-size="11">`,
    `<title>flag-proxy benchmark: req/s and CPU per request, per scenario and target</title>`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    `<text x="12" y="20" font-size="14" font-weight="600" fill="#111827">flag-proxy benchmark (npm run bench), ${escape(meta.date.slice(0, 10))}</text>`,
    `<text x="12" y="36" fill="#4b5563">${escape(`${meta.machine.split(',')[0] ?? ''}, target pinned to one core; medians over the rounds; logarithmic axes`)}</text>`,
  ];
  // Legend.
  let lx = 12;
  for (const target of targets) {
    out.push(`<rect x="${lx}" y="46" width="10" height="10" fill="${COLORS[target]}"/><text x="${lx + 14}" y="55" fill="#111827">${escape(TARGET_LABEL[target])}</text>`);
    lx += 24 + TARGET_LABEL[target].length * 6.5;
  }
  const bottom = height - 30 - (inProcess ? 20 : 0);
  for (const panel of panels) {
    out.push(`<text x="${panel.left}" y="${TOP - 8}" font-weight="600" fill="#111827">${escape(panel.title)}</text>`);
    for (const tick of panel.axis.ticks) {
      const x = panel.left + panel.axis.x(tick);
      out.push(`<line x1="${x.toFixed(1)}" y1="${TOP}" x2="${x.toFixed(1)}" y2="${bottom}" stroke="#e5e7eb"/>`);
      out.push(`<text x="${x.toFixed(1)}" y="${bottom + 12}" text-anchor="middle" fill="#6b7280">${escape(panel.text(tick))}</text>`);
    }
  }
  let y = TOP;
  for (const group of groups) {
    out.push(`<text x="12" y="${y + 17}" font-weight="600" fill="#111827">${group.flags} flags</text>`);
    out.push(`<line x1="12" y1="${y + 21}" x2="${width - 12}" y2="${y + 21}" stroke="#d1d5db"/>`);
    y += HEADING;
    for (const row of group.rows) {
      out.push(`<text x="${LABEL_WIDTH - 8}" y="${y + (targets.length * (BAR + BAR_GAP)) / 2 + 3}" text-anchor="end" fill="#111827">${escape(row)}</text>`);
      targets.forEach((target, i) => {
        const cell = cells.get(cellKey(group.flags, row, target));
        const by = y + i * (BAR + BAR_GAP);
        for (const panel of panels) {
          if (!cell) {
            out.push(`<text x="${panel.left + 2}" y="${by + BAR - 1}" fill="#9ca3af" font-size="9">— not measured</text>`);
            continue;
          }
          const value = panel.value(cell);
          const w = Math.max(1, panel.axis.x(value));
          out.push(
            `<rect x="${panel.left}" y="${by}" width="${w.toFixed(1)}" height="${BAR}" fill="${COLORS[target]}"><title>${escape(`${row}, ${group.flags} flags, ${TARGET_LABEL[target]}: ${panel.text(value)}`)}</title></rect>`,
            `<text x="${(panel.left + w + 3).toFixed(1)}" y="${by + BAR - 1}" fill="#374151" font-size="9">${escape(panel.text(value))}</text>`,
          );
        }
      });
      y += rowHeight;
    }
  }
  if (inProcess) {
    const parts = inProcess.rows.map((r) => `${r.name === 'whole-set' ? 'whole flag set' : r.name} ${(r.unleashClient.ns / r.flagProxy.ns).toFixed(1)}× faster than unleash-client`);
    out.push(`<text x="12" y="${height - 10}" fill="#111827">${escape(`In process, ${inProcess.flags} flags: ${parts.join('; ')} (bench/results.md).`)}</text>`);
  }
  out.push('</svg>', '');
  return out.join('\n');
}
