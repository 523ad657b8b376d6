/**
 * Logging: a small levelled logger, and the redaction every log line passes through so that
 * tokens and client keys never reach an output, whatever the level.
 */

/** Log levels, from most to least verbose. */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'fatal'] as const;
/** One of {@link LOG_LEVELS}. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/** What flag-proxy logs through. A custom logger receives every message at every level. */
export interface Logger {
  debug(message: string, ...args: unknown[]): void;
  info(message: string, ...args: unknown[]): void;
  warn(message: string, ...args: unknown[]): void;
  error(message: string, ...args: unknown[]): void;
  fatal(message: string, ...args: unknown[]): void;
}

/** Options of {@link createDefaultLogger}. */
export interface DefaultLoggerOptions {
  /** Lowest level written. @default 'warn' */
  level?: LogLevel;
  /** Write one JSON object per line instead of plain text. @default false */
  json?: boolean;
  /** Where lines go. @default process.stderr for warn and above, process.stdout below */
  write?: (line: string, level: LogLevel) => void;
}

const REDACTED = '[REDACTED]';

/** What {@link redactUrl} and the config's inspect/JSON views show in place of a secret. */
export const REDACTED_TEXT = '[redacted]';

// `scheme://userinfo@` anywhere in a text: the userinfo (user, password) is a credential.
const URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@]+@/gi;

/**
 * A URL as it may be shown: user and password replaced by `[redacted]`, the rest kept.
 *
 * @example
 * ```ts
 * redactUrl('http://bob:hunter2@flags.internal/api/'); // 'http://[redacted]@flags.internal/api/'
 * ```
 */
export function redactUrl(url: string | URL): string {
  let parsed: URL;
  try {
    parsed = typeof url === 'string' ? new URL(url) : url;
  } catch {
    return redactUrlCredentials(String(url));
  }
  if (parsed.username === '' && parsed.password === '') return parsed.href;
  const path = parsed.href.slice(parsed.protocol.length + 2).replace(/^[^@/?#]*@/, '');
  return `${parsed.protocol}//${REDACTED_TEXT}@${path}`;
}

/** A free text with the credentials of every URL in it replaced by `[redacted]`. */
export function redactUrlCredentials(text: string): string {
  return text.includes('@') ? text.replace(URL_CREDENTIALS, `$1${REDACTED_TEXT}@`) : text;
}

function describe(value: unknown): string {
  if (value instanceof Error) return value.stack ?? `${value.name}: ${value.message}`;
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

function jsonSafe(value: unknown): unknown {
  if (value instanceof Error) return { name: value.name, message: value.message, stack: value.stack };
  return value;
}

/**
 * The default logger: plain `LEVEL: message args` lines, or one-line JSON
 * `{"level","message","args"}` when `json` is set.
 */
export function createDefaultLogger(options: DefaultLoggerOptions = {}): Logger {
  const threshold = LOG_LEVELS.indexOf(options.level ?? 'warn');
  const write =
    options.write ??
    ((line: string, level: LogLevel) => {
      (LOG_LEVELS.indexOf(level) >= 2 ? process.stderr : process.stdout).write(`${line}\n`);
    });
  const emit = (level: LogLevel, message: string, args: unknown[]): void => {
    if (LOG_LEVELS.indexOf(level) < threshold) return;
    const line = options.json
      ? JSON.stringify({ level, time: new Date().toISOString(), message, args: args.map(jsonSafe) })
      : [`${level.toUpperCase()}: ${message}`, ...args.map(describe)].join(' ');
    write(line, level);
  };
  return {
    debug: (m, ...a) => emit('debug', m, a),
    info: (m, ...a) => emit('info', m, a),
    warn: (m, ...a) => emit('warn', m, a),
    error: (m, ...a) => emit('error', m, a),
    fatal: (m, ...a) => emit('fatal', m, a),
  };
}

/**
 * Secrets shorter than this are redacted only where they stand alone (not inside a longer run of
 * letters, digits, `_` or `-`): replacing every `a` of a line would mangle it and, worse, show
 * where the key's letters are. Longer ones are redacted wherever they occur.
 */
export const MIN_SUBSTRING_SECRET = 8;

/** The secrets of a redacting logger, prepared once. */
interface Secrets {
  /** Redacted wherever they occur, longest first. */
  long: readonly string[];
  /** Matches a short secret standing alone. */
  short: RegExp | undefined;
}

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function prepare(secrets: readonly string[]): Secrets {
  // Longest first, so a secret that contains another is replaced whole.
  const list = [...new Set(secrets.filter((s) => s.length > 0))].sort((a, b) => b.length - a.length);
  const short = list.filter((s) => s.length < MIN_SUBSTRING_SECRET);
  return {
    long: list.filter((s) => s.length >= MIN_SUBSTRING_SECRET),
    short: short.length === 0 ? undefined : new RegExp(`(?<![A-Za-z0-9_-])(?:${short.map(escapeRegExp).join('|')})(?![A-Za-z0-9_-])`, 'g'),
  };
}

function redactString(text: string, secrets: Secrets): string {
  let out = redactUrlCredentials(text);
  for (const secret of secrets.long) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  if (secrets.short) out = out.replace(secrets.short, REDACTED);
  return out;
}

function redactValue(value: unknown, secrets: Secrets, depth: number): unknown {
  if (typeof value === 'string') return redactString(value, secrets);
  if (value === null || typeof value !== 'object') return value;
  // Deeper than this, the value is logged as its (redacted) text rather than walked further.
  if (depth > 4) return redactString(describe(value), secrets);
  if (value instanceof Error) {
    const copy = new Error(redactString(value.message, secrets));
    copy.name = value.name;
    copy.stack = value.stack === undefined ? undefined : redactString(value.stack, secrets);
    return copy;
  }
  if (Array.isArray(value)) return value.map((v) => redactValue(v, secrets, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = redactValue(v, secrets, depth + 1);
  return out;
}

/**
 * Wraps a logger so that every occurrence of a secret, in the message or any argument (errors and
 * nested objects included), is replaced by `[REDACTED]` before the inner logger sees it, and the
 * credentials of any URL in them by `[redacted]`. A secret shorter than {@link MIN_SUBSTRING_SECRET}
 * characters is replaced only where it stands alone, so that it does not mangle every word.
 */
export function createRedactingLogger(inner: Logger, secrets: readonly string[]): Logger {
  const list = prepare(secrets);
  const wrap =
    (level: LogLevel) =>
    (message: string, ...args: unknown[]): void => {
      inner[level](redactString(message, list), ...args.map((a) => redactValue(a, list, 0)));
    };
  return {
    debug: wrap('debug'),
    info: wrap('info'),
    warn: wrap('warn'),
    error: wrap('error'),
    fatal: wrap('fatal'),
  };
}
