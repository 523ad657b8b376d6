/** Runs the Express SSR example: `npx tsx examples/express-ssr/server.ts` (PORT, FLAG_URL, … optional). */
import type { AddressInfo } from 'node:net';
import { exampleFlags, listeningMessage } from '../demo.js';
import { buildApp } from './app.js';

const flags = await exampleFlags();
const { app, proxy } = buildApp(flags.options);
const server = app.listen(Number(process.env.PORT ?? 3000), () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(listeningMessage('Express SSR', port, flags.demo));
  process.stdout.write(`  open http://localhost:${port}/ in a browser (Cookie session=alice or session=bob): rendered with the user's flags\n`);
});

process.once('SIGTERM', () => {
  // Stop accepting, let in-flight requests finish, then send the last usage report.
  server.close(() => void proxy.close().then(() => flags.close()));
  server.closeIdleConnections();
});
