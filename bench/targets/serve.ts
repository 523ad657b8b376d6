/**
 * The child side of a target process: waits for its config, starts the server on loopback,
 * reports its port, answers CPU usage queries and exits when told to, or as soon as the runner's
 * IPC channel closes (so no target outlives a crashed or killed runner).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { countHeapAllocation, liveHeapBytes, memoryParts } from '../heap.js';
import type { FromTarget, TargetConfig, ToTarget } from '../protocol.js';

/** A started target: its server, and what to release before exiting. */
export interface StartedTarget {
  server: http.Server;
  close?: () => Promise<void>;
}

function send(message: FromTarget): void {
  process.send?.(message);
}

/** Runs one target in this process under the runner's control. */
export function serveTarget(start: (config: TargetConfig) => Promise<StartedTarget>): void {
  if (!process.send) {
    console.error('This file is started by bench/run.ts (npm run bench), not directly.');
    process.exit(2);
  }
  let started: StartedTarget | undefined;
  let heap: { stop(): number } | undefined;
  const exit = async (code: number): Promise<void> => {
    const timer = setTimeout(() => process.exit(code), 2000);
    timer.unref();
    try {
      started?.server.closeAllConnections();
      started?.server.close();
      await started?.close?.();
    } finally {
      // Exiting normally (not by a signal) lets `--cpu-prof` write its profile.
      process.exit(code);
    }
  };
  process.on('disconnect', () => void exit(0));
  process.on('message', (message: ToTarget) => {
    if (message.type === 'start') {
      start(message.config)
        .then(async (target) => {
          started = target;
          await new Promise<void>((resolve) => target.server.listen(0, '127.0.0.1', resolve));
          send({ type: 'listening', port: (target.server.address() as AddressInfo).port });
        })
        .catch((error: unknown) => {
          send({ type: 'failed', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
          void exit(1);
        });
    } else if (message.type === 'usage') {
      const cpu = process.cpuUsage();
      send({ type: 'usage', cpuUs: cpu.user + cpu.system, systemUs: cpu.system, rssBytes: process.memoryUsage.rss() });
    } else if (message.type === 'heap-start') {
      heap = countHeapAllocation();
    } else if (message.type === 'heap-stop') {
      const allocatedBytes = heap?.stop() ?? Number.NaN;
      // Before the full collection that reading the live heap makes: what the window left.
      const parts = memoryParts();
      send({ type: 'heap', allocatedBytes, liveBytes: liveHeapBytes(), ...(parts ? { parts } : {}) });
      heap = undefined;
    } else if (message.type === 'stop') {
      void exit(0);
    }
  });
}
