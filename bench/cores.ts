/**
 * How busy each core was during a measurement, from /proc/stat, so the report can say when another
 * process shared a core with the target or the load generator (the bench cannot prevent that on a
 * shared machine, only show it).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let ticksPerSecond: number | undefined;

function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    const answer = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim());
    ticksPerSecond = Number.isFinite(answer) && answer > 0 ? answer : 100;
  }
  return ticksPerSecond;
}

/** Busy time (everything but idle and iowait) of each core so far, in µs. */
export function coreBusyUs(): number[] {
  const perTick = 1e6 / clockTicks();
  const busy: number[] = [];
  for (const line of readFileSync('/proc/stat', 'utf8').split('\n')) {
    const match = /^cpu(\d+)\s+(.*)$/.exec(line);
    if (!match) continue;
    const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = (match[2] ?? '').trim().split(/\s+/).map(Number);
    void idle;
    void iowait;
    busy[Number(match[1])] = (user + nice + system + irq + softirq + steal) * perTick;
  }
  return busy;
}

/** Share of each core that was busy over the next `ms` milliseconds (0..1 per core). */
export async function sampleCoreLoad(ms: number): Promise<number[]> {
  const before = coreBusyUs();
  await new Promise((resolve) => setTimeout(resolve, ms));
  const after = coreBusyUs();
  return after.map((busy, core) => Math.max(0, (busy - (before[core] ?? 0)) / (ms * 1000)));
}

/** CPU time (user + system, all threads) a process has used so far, in µs, read from /proc at once. */
export function processCpuUs(pid: number): number {
  return processCpuTime(pid).totalUs;
}

/** CPU time used so far, in µs: in all (user and system), and the part spent in the kernel (system). */
export interface CpuTime {
  totalUs: number;
  systemUs: number;
}

/** A process's {@link CpuTime}, from /proc (whole clock ticks). */
export function processCpuTime(pid: number): CpuTime {
  const fields = statFields(`/proc/${pid}/stat`);
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return { totalUs: ((utime + stime) * 1e6) / clockTicks(), systemUs: (stime * 1e6) / clockTicks() };
}

/**
 * CPU time of this process's children that have ended and been waited for (`cutime + cstime` of
 * /proc/self/stat), in µs: the part of the runner's load generation done by wrk, which exits at
 * the end of each run.
 */
export function endedChildrenCpuUs(): number {
  const fields = statFields('/proc/self/stat');
  return ((Number(fields[13]) + Number(fields[14])) * 1e6) / clockTicks();
}

/** The fields of a /proc `stat` file after the command name (in parentheses, and it may hold spaces): `state` is [0]. */
function statFields(file: string): string[] {
  const stat = readFileSync(file, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}
