/**
 * A flag set from the upstream (or a bootstrap, the backup, or another instance through a shared
 * storage) is prepared before the repository adopts it: the engine builds its snapshot in slices,
 * between which the host's own requests are served with the set current until then. Built at
 * once, 5,000 flags blocked the event loop for 88 ms (135 at worst) in the bench's refresh rows;
 * in slices, 33–35 (docs/performance.md, "Changing flag sets"). These tests hold the repository
 * to its side of that (nothing seen before the build is done, sets made current in the order they
 * came, a failed or abandoned build adopts nothing) and the engine to its own (every turn sees one
 * set, old or new, never a mix).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryStorageProvider, createTestFlagServer, type TestFlagServer } from 'flag-proxy/testing';
import { FlagRepository, REPOSITORY_EVENTS, type FlagSetViews, type RepositorySettings } from '../../src/evaluation/repository.js';
import { runInSlices, runSteps, StepsCancelled, type Steps } from '../../src/evaluation/steps.js';
import type { Engine } from '../../src/evaluation/engine.js';
import { engineSettings, startEngine } from '../support/engine.js';

const flag = (name: string, enabled = true) => ({ name, enabled, strategies: [{ name: 'default', parameters: {} }] });

/** A promise with its resolve and reject at hand. */
interface Deferred {
  promise: Promise<void>;
  resolve: () => void;
}
function deferred(): Deferred {
  let resolve!: () => void;
  const promise = new Promise<void>((res) => {
    resolve = res;
  });
  return { promise, resolve };
}

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

let upstream: TestFlagServer | undefined;
const repositories: FlagRepository[] = [];
const engines: Engine[] = [];
afterEach(async () => {
  for (const repository of repositories.splice(0)) {
    repository.stop();
    await repository.settled();
  }
  await Promise.all(engines.splice(0).map((engine) => engine.close()));
  await upstream?.close();
  upstream = undefined;
});

/** A repository of `upstream` that fetches only when asked (`refresh()`), with the given `prepare` hook. */
function repositoryOf(server: TestFlagServer, prepare: RepositorySettings['prepare'], overrides: Partial<RepositorySettings> = {}): FlagRepository {
  const repository = new FlagRepository({
    url: server.url,
    token: server.token,
    appName: 'prepared',
    instanceId: 'i',
    refreshInterval: 0,
    projectName: undefined,
    namePrefix: undefined,
    tags: undefined,
    storageProvider: createMemoryStorageProvider(),
    bootstrap: undefined,
    rejectUnauthorized: undefined,
    prepare,
    ...overrides,
  });
  repositories.push(repository);
  return repository;
}

const names = (repository: FlagRepository): string[] => repository.getToggles().map((t) => `${t.name}:${String(t.enabled)}`);
const featuresRequests = (server: TestFlagServer) => server.requests.filter((r) => r.path.endsWith('/client/features'));

/**
 * A repository of `server` whose preparations are logged (`prepare <names>`, then `install, repository
 * holds <names:enabled>` when made current) and wait while a gate is held (`hold()`, released by
 * its `resolve`).
 */
function loggedRepository(server: TestFlagServer, overrides: Partial<RepositorySettings>) {
  const log: string[] = [];
  let gate: Deferred | undefined;
  const repository = repositoryOf(
    server,
    async (held: () => FlagSetViews) => {
      log.push(`prepare ${[...held().features.keys()].join(',')}`);
      await gate?.promise;
      return () => log.push(`install, repository holds ${names(repository).join(',')}`);
    },
    { refreshInterval: 3_600_000, ...overrides },
  );
  const hold = (): Deferred => (gate = deferred());
  return { repository, log, hold };
}

describe('the repository prepares a flag set before adopting it', () => {
  it('holds the set it had while the next one is prepared, and installs the new one before announcing it', async () => {
    upstream = await createTestFlagServer({ features: [flag('a')] });
    const log: string[] = [];
    let gate: Deferred | undefined;
    const repository = repositoryOf(upstream, async (held: () => FlagSetViews) => {
      log.push(`prepare ${[...held().features.values()].map((f) => `${f.name}:${String(f.enabled)}`).join(',')}`);
      await gate?.promise;
      return () => log.push(`install, repository holds ${names(repository).join(',')}`);
    });
    repository.on(REPOSITORY_EVENTS.changed, () => log.push('changed'));
    await repository.refresh();
    expect(names(repository)).toEqual(['a:true']);

    upstream.setEnabled('a', false);
    gate = deferred();
    const refreshed = repository.refresh();
    while (!log.includes('prepare a:false')) await nextTurn();
    // The new set is being prepared: nothing of it shows yet.
    await nextTurn();
    expect(names(repository)).toEqual(['a:true']);
    gate.resolve();
    await refreshed;
    expect(names(repository)).toEqual(['a:false']);
    expect(log).toEqual([
      'prepare a:true',
      'install, repository holds a:true',
      'changed',
      'prepare a:false',
      'install, repository holds a:false',
      'changed',
    ]);
  });

  it('makes sets current in the order they arrived: one prepared after a later one was adopted is dropped', async () => {
    upstream = await createTestFlagServer({ features: [flag('a')] });
    const installed: number[] = [];
    const gates: Deferred[] = [];
    let preparations = 0;
    const repository = repositoryOf(upstream, async () => {
      const number = (preparations += 1);
      const gate = deferred();
      gates.push(gate);
      await gate.promise;
      return () => installed.push(number);
    });
    let changes = 0;
    repository.on(REPOSITORY_EVENTS.changed, () => (changes += 1));
    // Two refreshes asked for at once fetch side by side.
    const both = Promise.all([repository.refresh(), repository.refresh()]);
    while (gates.length < 2) await nextTurn();
    gates[1]!.resolve();
    while (installed.length < 1) await nextTurn();
    gates[0]!.resolve();
    await both;
    expect(featuresRequests(upstream)).toHaveLength(2);
    expect(installed).toEqual([2]);
    expect(changes).toBe(1);
    expect(names(repository)).toEqual(['a:true']);
  });

  it('adopts nothing when a preparation fails, reports it, and fetches the whole set again at the next poll', async () => {
    upstream = await createTestFlagServer({ features: [flag('a')] });
    let fail = false;
    const repository = repositoryOf(upstream, async () => {
      if (fail) throw new Error('build failed');
      return () => undefined;
    });
    const failures: unknown[] = [];
    repository.on(REPOSITORY_EVENTS.failure, (error) => failures.push(error));
    await repository.refresh();
    upstream.setEnabled('a', false);
    fail = true;
    await expect(repository.refresh()).rejects.toThrow('build failed');
    expect(failures).toHaveLength(1);
    expect(names(repository)).toEqual(['a:true']);

    fail = false;
    await repository.refresh();
    expect(names(repository)).toEqual(['a:false']);
    // The poll after the failure sent the ETag of the set still current, not that of the answer
    // that was not adopted (which would have been answered 304, and the change never built).
    const [first, second, third] = featuresRequests(upstream);
    expect(first?.headers['if-none-match']).toBeUndefined();
    expect(second?.headers['if-none-match']).toBeDefined();
    expect(third?.headers['if-none-match']).toBe(second?.headers['if-none-match']);
  });

  it('prepares a set another instance stored (a watched storage) before adopting it, and does not write it back', async () => {
    upstream = await createTestFlagServer({ features: [flag('a')] });
    const storage = createMemoryStorageProvider();
    let notify: (() => void) | undefined;
    let writes = 0;
    const watched = {
      get: (key: string) => storage.get(key),
      set: async (key: string, data: Parameters<typeof storage.set>[1]) => {
        writes += 1;
        await storage.set(key, data);
      },
      watch: (_key: string, onChange: () => void) => {
        notify = onChange;
        return () => (notify = undefined);
      },
    };
    const { repository, log, hold } = loggedRepository(upstream, { storageProvider: watched });
    repository.on(REPOSITORY_EVENTS.changed, () => log.push('changed'));
    await repository.refresh();
    expect(writes).toBe(1);
    void repository.start();

    // Another instance stores a different set and says so.
    await storage.set('prepared', { version: 2, features: [flag('a'), flag('b')], segments: [] } as never);
    const gate = hold();
    notify?.();
    while (!log.includes('prepare a,b')) await nextTurn();
    await nextTurn();
    expect(names(repository)).toEqual(['a:true']);
    gate.resolve();
    while (!log.includes('install, repository holds a:true,b:true')) await nextTurn();
    await nextTurn();
    expect(names(repository)).toEqual(['a:true', 'b:true']);
    expect(log.slice(-3)).toEqual(['prepare a,b', 'install, repository holds a:true,b:true', 'changed']);
    // What the storage holds is not written back.
    expect(writes).toBe(1);
  });

  it('prepares a set read from the backup, which makes it ready without announcing a change or writing it back', async () => {
    upstream = await createTestFlagServer({ features: [flag('a')] });
    // The upstream is down: the backup is all there is.
    upstream.setFault({ status: 503 });
    const storage = createMemoryStorageProvider();
    await storage.set('prepared', { version: 2, features: [flag('backed-up')], segments: [] } as never);
    const saved = JSON.stringify([...storage.saved]);
    const { repository, log, hold } = loggedRepository(upstream, { storageProvider: storage });
    const gate = hold();
    for (const event of [REPOSITORY_EVENTS.ready, REPOSITORY_EVENTS.changed]) repository.on(event, () => log.push(event));
    void repository.start();
    while (!log.includes('prepare backed-up')) await nextTurn();
    await nextTurn();
    expect(repository.getToggles()).toEqual([]);
    gate.resolve();
    while (!log.includes('ready')) await nextTurn();
    expect(names(repository)).toEqual(['backed-up:true']);
    expect(log).toEqual(['prepare backed-up', 'install, repository holds backed-up:true', 'ready']);
    expect(JSON.stringify([...storage.saved])).toBe(saved);
  });

  it('adopts nothing and reports no failure when stopped during a preparation', async () => {
    upstream = await createTestFlagServer({ features: [flag('a')] });
    const gate = deferred();
    let installs = 0;
    let prepared = false;
    const repository = repositoryOf(upstream, async () => {
      prepared = true;
      await gate.promise;
      return () => (installs += 1);
    });
    const events: string[] = [];
    for (const event of Object.values(REPOSITORY_EVENTS)) repository.on(event, () => events.push(event));
    const refreshed = repository.refresh();
    while (!prepared) await nextTurn();
    repository.stop();
    gate.resolve();
    await refreshed;
    await repository.settled();
    expect(installs).toBe(0);
    expect(events).toEqual([]);
    expect(repository.getToggles()).toEqual([]);
  });
});

/** Steps that each take about `ms` of CPU, `count` of them, noting each one in `log`. */
function* busySteps(count: number, ms: number, log: string[]): Steps<number> {
  for (let i = 0; i < count; i += 1) {
    const until = performance.now() + ms;
    while (performance.now() < until);
    log.push(`step ${i}`);
    yield;
  }
  return count;
}

describe('work in slices', () => {
  it('runs at once with runSteps', () => {
    const log: string[] = [];
    expect(runSteps(busySteps(3, 0, log))).toBe(3);
    expect(log).toEqual(['step 0', 'step 1', 'step 2']);
  });

  it('lets the event loop turn between slices: a callback queued meanwhile runs before the work ends', async () => {
    const log: string[] = [];
    const work = runInSlices(busySteps(40, 1, log), () => false, 5);
    let turns = 0;
    const tick = (): void => {
      log.push('turn');
      turns += 1;
      if (log.at(-2) !== 'step 39') setImmediate(tick);
    };
    setImmediate(tick);
    expect(await work).toBe(40);
    // 40 ms of work in slices of 5 (checked every 8 steps): several turns came between steps.
    const between = log.slice(log.indexOf('step 0'), log.indexOf('step 39')).filter((entry) => entry === 'turn');
    expect(between.length).toBeGreaterThanOrEqual(3);
    expect(turns).toBeGreaterThanOrEqual(between.length);
  });

  it('stops at the next turn once cancelled, closing the work', async () => {
    let cancelled = false;
    let closed = false;
    const log: string[] = [];
    function* steps(): Steps<void> {
      try {
        yield* busySteps(100, 1, log);
      } finally {
        closed = true;
      }
    }
    const work = runInSlices(steps(), () => cancelled, 2);
    setImmediate(() => (cancelled = true));
    await expect(work).rejects.toBeInstanceOf(StepsCancelled);
    expect(closed).toBe(true);
    expect(log.length).toBeLessThan(100);
  });
});

describe('the engine builds a large flag set in slices', () => {
  /** Flags whose build takes a while: a rollout with a constraint each. */
  const heavy = (count: number, enabled: boolean): Array<Record<string, unknown>> =>
    Array.from({ length: count }, (_, i) => ({
      name: `flag-${i}`,
      enabled,
      strategies: [
        {
          name: 'flexibleRollout',
          parameters: { rollout: '100', stickiness: 'default', groupId: `flag-${i}` },
          constraints: [{ contextName: 'region', operator: 'NOT_IN', values: ['nowhere', `r-${i}`] }],
        },
      ],
    }));

  it('answers from the set it had until the new one is built, and from the new one once refresh resolves', async () => {
    upstream = await createTestFlagServer({ features: heavy(3000, true) as never });
    const engine = await startEngine(engineSettings({ url: upstream.url, token: upstream.token, refreshInterval: 3_600_000 }));
    engines.push(engine);
    const context = { userId: 'u1', region: 'eu' };
    const seen = (): string => {
      const { revision, compiled } = engine.snapshot();
      const on = compiled.isOn('flag-0', context) && compiled.isOn('flag-2999', context);
      const defined = engine.definition('flag-0')?.enabled === true && engine.definition('flag-2999')?.enabled === true;
      return `${revision}:${String(on)}:${String(defined)}`;
    };
    expect(seen()).toBe('1:true:true');

    upstream.setFeatures(heavy(3000, false) as never);
    const observed = new Set<string>();
    let done = false;
    const watch = (): void => {
      observed.add(seen());
      if (!done) setImmediate(watch);
    };
    setImmediate(watch);
    await engine.refresh();
    done = true;
    expect(seen()).toBe('2:false:false');
    // Every turn saw one set whole: its definitions and its evaluation agree.
    expect([...observed].every((state) => state === '1:true:true' || state === '2:false:false')).toBe(true);
    expect(observed.has('1:true:true')).toBe(true);
  });
});
