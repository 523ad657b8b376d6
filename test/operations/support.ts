/**
 * Helpers of the operations tests: the CLI as a child process, a self-signed certificate, a TLS
 * front for the test flag server, a forward proxy that records what passes through it, and a
 * Prometheus text reader. Everything listens on loopback and is closed by its `close()`.
 */
import { execFileSync } from 'node:child_process';
import { generateKeyPairSync, randomBytes, sign, X509Certificate } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import tls from 'node:tls';

import { root } from '../support/cli.js';

export { root, startCli, waitForHealth, type Cli } from '../support/cli.js';

/** A fresh temporary directory (removed by the caller with `rmSync(dir, { recursive: true })`). */
export function tempDir(prefix: string): string {
  return mkdtempSync(path.join(tmpdir(), `flag-proxy-${prefix}-`));
}

/**
 * A tsconfig for tsx without the repository's `paths` (which map `flag-proxy` to the sources from
 * anywhere): with it, a file outside the repository resolves `flag-proxy` the way node does.
 */
export function tsconfigWithoutPaths(dir: string): string {
  const config = JSON.parse(readFileSync(path.join(root, 'tsconfig.json'), 'utf8')) as { compilerOptions: Record<string, unknown> };
  delete config.compilerOptions.paths;
  const file = path.join(dir, 'tsconfig.json');
  writeFileSync(file, JSON.stringify({ compilerOptions: config.compilerOptions, files: [] }));
  return file;
}

/**
 * Installs this package's sources as `<dir>/node_modules/flag-proxy` (ESM and CJS entries, run
 * through tsx like the CLI under test), as `npm install flag-proxy` would put the build there.
 */
export function installFlagProxy(dir: string): void {
  const target = path.join(dir, 'node_modules', 'flag-proxy');
  mkdirSync(target, { recursive: true });
  const source = JSON.stringify(path.join(root, 'src/index.ts'));
  writeFileSync(path.join(target, 'package.json'), JSON.stringify({ name: 'flag-proxy', exports: { import: './index.mjs', require: './index.cjs' } }));
  writeFileSync(path.join(target, 'index.mjs'), `export * from ${source};\n`);
  writeFileSync(path.join(target, 'index.cjs'), `module.exports = require(${source});\n`);
}

// --- Self-signed certificate --------------------------------------------------------------------

/** A PEM key and certificate for `127.0.0.1`. */
export interface Certificate {
  key: string;
  cert: string;
  /** How it was made. */
  by: 'openssl' | 'node';
}

/** A self-signed certificate for 127.0.0.1: from `openssl` when installed, else built with node:crypto. */
export function selfSignedCertificate(): Certificate {
  const dir = tempDir('cert');
  try {
    execFileSync(
      'openssl',
      ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'key.pem', '-out', 'cert.pem', '-days', '2', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'],
      { cwd: dir, stdio: 'ignore' },
    );
    return { key: readFileSync(path.join(dir, 'key.pem'), 'utf8'), cert: readFileSync(path.join(dir, 'cert.pem'), 'utf8'), by: 'openssl' };
  } catch {
    return nodeSelfSignedCertificate();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** DER: tag, length, content. */
function der(tag: number, content: Buffer): Buffer {
  if (content.length < 0x80) return Buffer.concat([Buffer.from([tag, content.length]), content]);
  const length: number[] = [];
  for (let n = content.length; n > 0; n >>= 8) length.unshift(n & 0xff);
  return Buffer.concat([Buffer.from([tag, 0x80 | length.length, ...length]), content]);
}
const sequence = (...items: Buffer[]) => der(0x30, Buffer.concat(items));
/** A DER INTEGER of unsigned big-endian bytes, minimal as DER requires (no redundant leading zero). */
function integer(bytes: Buffer): Buffer {
  let start = 0;
  // A random serial can start with 0x00: "illegal padding" to a strict parser (1 run in 256).
  while (start < bytes.length - 1 && bytes[start] === 0 && ((bytes[start + 1] ?? 0) & 0x80) === 0) start += 1;
  const minimal = bytes.subarray(start);
  return der(0x02, (minimal[0] ?? 0) & 0x80 ? Buffer.concat([Buffer.from([0]), minimal]) : minimal);
}
function oid(dotted: string): Buffer {
  const [a, b, ...rest] = dotted.split('.').map(Number) as [number, number, ...number[]];
  const bytes = [40 * a + b];
  for (const n of rest) {
    const groups = [n & 0x7f];
    for (let v = n >> 7; v > 0; v >>= 7) groups.unshift((v & 0x7f) | 0x80);
    bytes.push(...groups);
  }
  return der(0x06, Buffer.from(bytes));
}
function utcTime(date: Date): Buffer {
  const iso = date.toISOString(); // YYYY-MM-DDTHH:MM:SS.sssZ
  return der(0x17, Buffer.from(`${iso.slice(2, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}Z`));
}

/** The fallback: an X.509 v3 certificate assembled in DER and signed with node:crypto. */
export function nodeSelfSignedCertificate(): Certificate {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const algorithm = sequence(oid('1.2.840.113549.1.1.11'), Buffer.from([0x05, 0x00])); // sha256WithRSAEncryption
  const name = sequence(der(0x31, sequence(oid('2.5.4.3'), der(0x0c, Buffer.from('127.0.0.1')))));
  const now = Date.now();
  const validity = sequence(utcTime(new Date(now - 86_400_000)), utcTime(new Date(now + 2 * 86_400_000)));
  const subjectAltName = sequence(oid('2.5.29.17'), der(0x04, sequence(der(0x87, Buffer.from([127, 0, 0, 1])))));
  const serial = randomBytes(8);
  serial[0] = (serial[0] ?? 0) & 0x7f;
  const tbs = sequence(
    der(0xa0, integer(Buffer.from([2]))),
    integer(serial),
    algorithm,
    name,
    validity,
    name,
    publicKey.export({ type: 'spki', format: 'der' }),
    der(0xa3, sequence(subjectAltName)),
  );
  const signature = sign('sha256', tbs, privateKey);
  const certificate = sequence(tbs, algorithm, der(0x03, Buffer.concat([Buffer.from([0]), signature])));
  const cert = `-----BEGIN CERTIFICATE-----\n${certificate.toString('base64').replace(/.{64}/g, '$&\n').replace(/\n?$/, '\n')}-----END CERTIFICATE-----\n`;
  new X509Certificate(cert); // throws if the encoding is wrong
  return { key: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, cert, by: 'node' };
}

// --- Servers ----------------------------------------------------------------------------------

/** A loopback server with its URL and a close that ends every connection. */
export interface Running {
  port: number;
  close(): Promise<void>;
}

function tracked(server: net.Server): { sockets: Set<Socket>; close(): Promise<void> } {
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  return {
    sockets,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

async function listen(server: net.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** TLS in front of a plain TCP port on loopback: `https://127.0.0.1:<port>` reaches `targetPort`. */
export async function startTlsFront(targetPort: number, certificate: Certificate): Promise<Running> {
  const extra = new Set<Socket>();
  const server = tls.createServer({ key: certificate.key, cert: certificate.cert }, (socket) => {
    const target = net.connect(targetPort, '127.0.0.1');
    extra.add(target);
    target.on('close', () => extra.delete(target));
    socket.pipe(target).pipe(socket);
    socket.on('error', () => target.destroy());
    target.on('error', () => socket.destroy());
  });
  // A client that refuses the certificate resets the handshake; nothing to report.
  server.on('tlsClientError', () => undefined);
  const closer = tracked(server);
  const port = await listen(server);
  return {
    port,
    async close() {
      for (const socket of extra) socket.destroy();
      await closer.close();
    },
  };
}

/** What a forward proxy saw: `GET http://…/path` (plain HTTP) or `CONNECT host:port` (tunnels). */
export interface ProxiedRequest {
  method: string;
  target: string;
}

/** A forward proxy (HTTP_PROXY / HTTPS_PROXY) that records every request passing through it. */
export async function startForwardProxy(): Promise<Running & { url: string; seen: ProxiedRequest[] }> {
  const seen: ProxiedRequest[] = [];
  const tunnels = new Set<Socket>();
  const server = http.createServer((req, res) => {
    seen.push({ method: req.method ?? '', target: req.url ?? '' });
    let target: URL;
    try {
      target = new URL(req.url ?? '');
    } catch {
      res.writeHead(400).end();
      return;
    }
    const outgoing = http.request(
      { host: target.hostname, port: target.port, method: req.method, path: `${target.pathname}${target.search}`, headers: req.headers, agent: false },
      (incoming) => {
        res.writeHead(incoming.statusCode ?? 502, incoming.headers);
        incoming.pipe(res);
      },
    );
    outgoing.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    req.pipe(outgoing);
  });
  server.on('connect', (req: http.IncomingMessage, socket: Socket, head: Buffer) => {
    seen.push({ method: 'CONNECT', target: req.url ?? '' });
    const [host, port] = (req.url ?? '').split(':');
    const target = net.connect(Number(port), host ?? '127.0.0.1', () => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      target.write(head);
      target.pipe(socket).pipe(target);
    });
    for (const s of [socket, target]) {
      tunnels.add(s);
      s.on('close', () => tunnels.delete(s));
    }
    target.on('error', () => socket.destroy());
    socket.on('error', () => target.destroy());
  });
  const closer = tracked(server);
  const port = await listen(server);
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    seen,
    async close() {
      for (const socket of tunnels) socket.destroy();
      server.closeAllConnections();
      await closer.close();
    },
  };
}

// --- Prometheus text ----------------------------------------------------------------------------

/** Parses `name{a="b",c="d"} value` lines. */
export function samples(text: string): Array<{ name: string; labels: Record<string, string>; value: number }> {
  const out: Array<{ name: string; labels: Record<string, string>; value: number }> = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)$/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

/** The value of the one sample named `name` whose labels include `labels`, or undefined. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const found = samples(text).filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return found[0]?.value;
}
