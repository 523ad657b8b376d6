/**
 * Preloaded (`node --import`) into flag-proxy's CLI, and by node:cluster into each of its workers,
 * when the bench runs it. Two things, neither of which touches how a request is served:
 *
 * - **Loopback only.** The CLI listens on every interface (`::`) and has no host setting; the bench
 *   keeps it on 127.0.0.1, as the other targets, so the port is not reachable from outside the
 *   machine. A `listen(port)` without a host is given `127.0.0.1`.
 * - **No orphans.** The CLI has no bench protocol, so this ties its life to the runner's: when the
 *   runner's IPC channel closes (it ended or was killed), the primary kills its workers and exits.
 *   Workers already stop on their own when their primary goes.
 */
import cluster from 'node:cluster';
import net from 'node:net';

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function listenOnLoopback(this: net.Server, ...args: unknown[]) {
  if (typeof args[0] === 'number' && typeof args[1] !== 'string') args.splice(1, 0, '127.0.0.1');
  return (listen as (...a: unknown[]) => net.Server).apply(this, args);
} as typeof listen;

if (cluster.isPrimary && process.send) {
  // The channel must not keep the CLI alive once it decides to exit on its own.
  process.channel?.unref();
  process.on('disconnect', () => {
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGKILL');
    process.exit(1);
  });
}
