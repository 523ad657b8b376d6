/** Runs the node:http example: `npx tsx examples/node-http/server.ts` (PORT, FLAG_URL, … optional). */
import type { AddressInfo } from 'node:net';
import { exampleFlags, listeningMessage } from '../demo.js';
import { buildApp } from './app.js';

const flags = await exampleFlags();
const { server, proxy } = buildApp(flags.options);
server.listen(Number(process.env.PORT ?? 3000), () => {
  process.stdout.write(listeningMessage('node:http', (server.address() as AddressInfo).port, flags.demo));
});

process.once('SIGTERM', () => {
  // Stop accepting, let in-flight requests finish, then send the last usage report.
  server.close(() => void proxy.close().then(() => flags.close()));
  server.closeIdleConnections();
});
