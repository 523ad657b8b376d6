/**
 * `flag-proxy events`: prints the flag server's admin events as a table or as JSON.
 * Kept free of process globals (argv, env and streams come in as arguments) so it is testable
 * and the main CLI decides how to exit.
 */
import { parseArgs } from 'node:util';
import { isFlagProxyError } from '../errors.js';
import { createAdminEventsClient } from './client.js';
import type { AdminEvent } from './schemas.js';

/**
 * Where the command writes: `process.stdout`/`process.stderr`, or a test double.
 *
 * @example
 * ```ts
 * const chunks: string[] = [];
 * const out: TextSink = { write: (s) => void chunks.push(s) };
 * ```
 */
export interface TextSink {
  write(text: string): void;
}

const USAGE = `Usage: flag-proxy events [--project <id>] [--toggle <name>] [--all] [--json]

Lists the flag server's admin events, newest first.

  --project <id>   only events of this project (the server sends at most 50 of them)
  --toggle <name>  only events of this toggle (the server sends at most 50 of them)
  --all            page through the whole history instead of the capped feed
  --json           print JSON instead of a table
  -h, --help       print this help

Environment:
  FLAG_URL          the flag server: its API URL (as for the proxy) or its root
  FLAG_ADMIN_TOKEN  an ADMIN API token of the flag server
`;

const COLUMNS = ['id', 'createdAt', 'type', 'featureName', 'project', 'environment', 'createdBy'] as const;

/** Exit codes: 0 done, 1 the flag server request failed, 2 bad usage or configuration. */
const EXIT_OK = 0;
const EXIT_FAILED = 1;
const EXIT_USAGE = 2;

/**
 * Runs `flag-proxy events [--project P] [--toggle T] [--all] [--json]` and resolves to its exit
 * code: 0 on success, 1 when the flag server request fails, 2 on bad flags or a missing
 * `FLAG_URL`/`FLAG_ADMIN_TOKEN`. `argv` holds the arguments after `events` (a leading `events`
 * is skipped). Errors are one line on `err` and never contain the token.
 *
 * @example
 * ```ts
 * const code = await runEventsCommand(process.argv.slice(3), process.env, process.stdout, process.stderr);
 * process.exitCode = code;
 * ```
 */
export async function runEventsCommand(
  argv: string[],
  env: Record<string, string | undefined>,
  out: TextSink,
  err: TextSink,
): Promise<number> {
  const token = env.FLAG_ADMIN_TOKEN;
  const fail = (code: number, message: string): number => {
    let line = message.replace(/\s*\n\s*/g, ' ');
    if (token !== undefined && token !== '') line = line.split(token).join('[redacted]');
    err.write(`flag-proxy events: ${line}\n`);
    return code;
  };

  const args = argv[0] === 'events' ? argv.slice(1) : argv;
  let values: { project?: string; toggle?: string; all?: boolean; json?: boolean; help?: boolean };
  try {
    ({ values } = parseArgs({
      args,
      strict: true,
      allowPositionals: false,
      options: {
        project: { type: 'string' },
        toggle: { type: 'string' },
        all: { type: 'boolean' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (e) {
    return fail(EXIT_USAGE, `${firstSentence(e)} (see flag-proxy events --help)`);
  }

  if (values.help === true) {
    out.write(USAGE);
    return EXIT_OK;
  }
  if (values.project !== undefined && values.toggle !== undefined) {
    return fail(EXIT_USAGE, 'give either --project or --toggle, not both');
  }
  if (values.project === '' || values.toggle === '') {
    return fail(EXIT_USAGE, `--${values.project === '' ? 'project' : 'toggle'} needs a non-empty value`);
  }
  const flagUrl = env.FLAG_URL;
  if (flagUrl === undefined || flagUrl === '') {
    return fail(EXIT_USAGE, "FLAG_URL is not set: the flag server's API URL, e.g. https://flags.example.com/api/");
  }
  if (token === undefined || token === '') {
    return fail(EXIT_USAGE, 'FLAG_ADMIN_TOKEN is not set: an ADMIN API token of the flag server');
  }

  try {
    const client = createAdminEventsClient({ flagUrl, adminToken: token });
    const all = values.all === true;
    const result =
      values.toggle !== undefined
        ? await client.forToggle(values.toggle, { all })
        : await client.list({ project: values.project, all });
    if (values.json === true) {
      out.write(`${JSON.stringify(result, null, 2)}\n`);
    } else {
      out.write(formatTable(result.events));
      out.write(`${footer(result.events.length, result.totalEvents, all)}\n`);
    }
    return EXIT_OK;
  } catch (e) {
    if (isFlagProxyError(e)) {
      return fail(e.code === 'INVALID_OPTION' || e.code === 'BAD_REQUEST' ? EXIT_USAGE : EXIT_FAILED, e.message);
    }
    return fail(EXIT_FAILED, `unexpected error: ${firstSentence(e)}`);
  }
}

function formatTable(events: readonly AdminEvent[]): string {
  if (events.length === 0) return '';
  const rows = [
    [...COLUMNS],
    ...events.map((event) => COLUMNS.map((column) => cell(event[column]))),
  ];
  const widths = COLUMNS.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  return rows
    .map((row) =>
      row
        // ids read best right-aligned; everything else left-aligned
        .map((text, i) => (i === 0 ? text.padStart(widths[i]!) : text.padEnd(widths[i]!)))
        .join('  ')
        .trimEnd(),
    )
    .map((line) => `${line}\n`)
    .join('');
}

function footer(shown: number, total: number | undefined, all: boolean): string {
  if (shown === 0) return 'No events.';
  const noun = shown === 1 ? 'event' : 'events';
  if (!all && total !== undefined && total > shown) {
    return `${shown} of ${total} ${noun} shown (the flag server caps this feed); add --all for the full history.`;
  }
  return `${shown} ${noun}.`;
}

/** A table cell: `-` for nothing, control characters (from user-supplied names) neutralised. */
function cell(value: unknown): string {
  if (value === null || value === undefined || value === '') return '-';
  // eslint-disable-next-line no-control-regex
  return String(value).replace(/[\u0000-\u001f\u007f-\u009f]/g, ' ');
}

function firstSentence(e: unknown): string {
  const message = e instanceof Error ? e.message : String(e);
  const end = message.search(/\.\s/);
  return end === -1 ? message.replace(/\.$/, '') : message.slice(0, end);
}
