/**
 * Every examples/<server>/server.ts, run with tsx as examples/README.md says (demo mode, PORT=0):
 * it prints where it listens, answers, and on SIGTERM shuts down and exits 0 on its own.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DEMO_CLIENT_KEY } from '../../examples/demo.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

async function eventually<T>(attempt: () => Promise<T>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

describe.concurrent('examples/*/server.ts', () => {
  it.each(['node-http', 'express', 'express-ssr', 'koa', 'fastify', 'hono'])('%s starts, answers, and exits 0 on SIGTERM', { timeout: 60_000 }, async (name) => {
    const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0' };
    delete env.FLAG_URL;
    // tsx's loader in node itself rather than the tsx CLI: the CLI relays SIGTERM to its child and
    // SIGKILLs it when the child does not confirm within 30 ms, which a busy machine can miss.
    const child = spawn(process.execPath, ['--import', 'tsx', `examples/${name}/server.ts`], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const port = await eventually(async () => {
        const match = /listening on http:\/\/localhost:(\d+)/.exec(output);
        if (!match) throw new Error(`no listening line yet:\n${output}`);
        return match[1];
      }, 30_000);
      const base = `http://127.0.0.1:${port}`;
      const res = await eventually(async () => {
        const r = await fetch(`${base}/api/flags/proxy`, { headers: { authorization: DEMO_CLIENT_KEY } });
        if (r.status !== 200) throw new Error(`status ${r.status}`);
        return r;
      });
      expect(((await res.json()) as { toggles: unknown[] }).toggles.length).toBeGreaterThan(0);
      expect(await (await fetch(`${base}/api/hello`)).json()).toEqual({ hello: 'stranger' });
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited, output).toBe(0);
  });
});
