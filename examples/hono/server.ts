/** Runs the Hono example on Node: `npx tsx examples/hono/server.ts` (PORT, FLAG_URL, … optional). */
import type { Server } from 'node:http';
import { serve } from '@hono/node-server';
import { exampleFlags, listeningMessage } from '../demo.js';
import { buildApp } from './app.js';

const flags = await exampleFlags();
const { app, proxy } = buildApp(flags.options);
const server = serve({ fetch: app.fetch, port: Number(process.env.PORT ?? 3000) }, (info) => {
  process.stdout.write(listeningMessage('Hono', info.port, flags.demo));
}) as Server;

process.once('SIGTERM', () => {
  // Stop accepting, let in-flight requests finish, then send the last usage report.
  server.close(() => void proxy.close().then(() => flags.close()));
  server.closeIdleConnections();
});
