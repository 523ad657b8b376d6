/** Runs the Fastify example: `npx tsx examples/fastify/server.ts` (PORT, FLAG_URL, … optional). */
import type { AddressInfo } from 'node:net';
import { exampleFlags, listeningMessage } from '../demo.js';
import { buildApp } from './app.js';

const flags = await exampleFlags();
const { app } = await buildApp(flags.options);
await app.listen({ port: Number(process.env.PORT ?? 3000), host: '0.0.0.0' });
process.stdout.write(listeningMessage('Fastify', (app.server.address() as AddressInfo).port, flags.demo));

process.once('SIGTERM', () => {
  // Fastify stops accepting and closes the proxy (the plugin's preClose hook, which also ends open
  // event streams), then finishes in-flight requests.
  void app.close().then(() => flags.close());
});
