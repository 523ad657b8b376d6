/**
 * The docs cannot rot: every fenced code block of README.md and docs/*.md is run, and every
 * relative link points at a file (and heading) that exists.
 *
 * Rules for a block, by the language after its opening fence:
 *
 * - `ts`, `js` (also `typescript`, `javascript`, `mjs`, `cjs`): type-checked against the package's
 *   sources, in one TypeScript program for all blocks, with the repository's tsconfig.json, so
 *   `flag-proxy`, `flag-proxy/express`, … resolve as in the tests. Each block is its own module: it
 *   must import what it uses. Two placeholders are declared for every block and may be used
 *   without a declaration: `options` (a `FlagProxyOptions`) and `sessionOf(req)` (your session
 *   lookup, `{ userId, roles } | undefined`). A `ts` block is an ES module (top-level `await` is
 *   fine); a `js` block using `require` or `module.exports` is checked as CommonJS, else as ESM.
 * - `sh`, `bash`: every `npm run X` (and `npm start`, `npm test`) names a script of package.json,
 *   `npx flag-proxy` its bin; every `npx tsx FILE`,
 *   `npx vitest run PATH` and `bash FILE` names a file of the repository; every variable assigned
 *   (`NAME=value`) is one flag-proxy, its tools or its tests read (src/config/names.ts, the CLI,
 *   bench/, test/, .ci/), a `FLAG_ENV_<NAME>_<SETTING>` variable, or one read by Node or the
 *   outbound-proxy support (`KNOWN_ELSEWHERE`).
 * - `json`: parses.
 * - anything else, and any block that cannot run as it stands (a fragment, a rules file, output),
 *   needs `<!-- not-run: reason -->` on the line right before its opening fence. The test counts
 *   these and fails on a block with neither a runnable language nor the marker.
 *
 * Links: every `[text](target)` and `![alt](target)` that is not a URL must name an existing file
 * relative to the Markdown file, and a `#anchor` must be the GitHub slug of a heading of the
 * target (or of the same file). A URL of this repository's own files on GitHub
 * (`<repository>/blob/main/PATH`, `raw.githubusercontent.com/<owner>/<name>/main/PATH`) is checked
 * as PATH from the repository's root: README.md uses only those, as the registry's page shows it
 * alone (test/package/metadata.test.ts), and they must not rot either.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { ENV_NAMES, ENVIRONMENT_VARIABLE_SUFFIXES } from 'flag-proxy';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const self = fileURLToPath(import.meta.url);

/**
 * Pages other helpers are writing, linked before they arrive: a link to one is accepted while the
 * file is missing. Once a page exists the test asks for its name to be taken out of this list.
 */
const PENDING_PAGES = new Set<string>([]);

/** `https://github.com/<owner>/<name>`, from package.json's repository. */
const repositoryUrl = /^git\+(https:\/\/github\.com\/[^/]+\/[^/]+?)\.git$/.exec(
  (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { repository: { url: string } }).repository.url,
)![1]!;
const ownUrlPrefixes = [`${repositoryUrl}/blob/main/`, `${repositoryUrl.replace('https://github.com/', 'https://raw.githubusercontent.com/')}/main/`];

/** The repository path a link names (relative to the root), or undefined for another site's URL. */
function resolveLink(file: string, pathPart: string): string | undefined {
  const own = ownUrlPrefixes.find((prefix) => pathPart.startsWith(prefix));
  if (own !== undefined) return path.posix.normalize(decodeURI(pathPart.slice(own.length)));
  if (/^[a-z][a-z0-9+.-]*:/i.test(pathPart)) return undefined; // https:, mailto:, …
  return pathPart === '' ? file : path.posix.normalize(path.posix.join(path.posix.dirname(file), decodeURI(pathPart)));
}

/**
 * Variables read by something other than our code: Node itself, the outbound-proxy support
 * (proxy-from-env), and `@unleash/nextjs` (its server and browser settings, shown in
 * docs/migrating-from-edge.md; the SDK runs against a proxy in test/e2e/edge-sdks.test.ts).
 */
const KNOWN_ELSEWHERE = new Set([
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'NODE_OPTIONS',
  'NODE_EXTRA_CA_CERTS',
  // @unleash/nextjs
  'UNLEASH_SERVER_API_URL',
  'UNLEASH_SERVER_API_TOKEN',
  'NEXT_PUBLIC_UNLEASH_FRONTEND_API_URL',
  'NEXT_PUBLIC_UNLEASH_FRONTEND_API_TOKEN',
]);

const TYPED = new Set(['ts', 'typescript', 'js', 'javascript', 'mjs', 'cjs']);
const SHELL = new Set(['sh', 'bash', 'shell']);
const NOT_RUN = /^<!--\s*not-run:\s*(.*?)\s*-->$/;

interface Block {
  file: string; // relative to the repository, e.g. docs/options.md
  line: number; // 1-based line of the opening fence
  lang: string;
  code: string;
  notRun?: string; // the reason given by the marker
}

const markdownFiles = [
  'README.md',
  ...readdirSync(path.join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`),
];
const texts = new Map(markdownFiles.map((f) => [f, readFileSync(path.join(root, f), 'utf8')]));

function blocksOf(file: string, text: string): Block[] {
  const lines = text.split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(`{3,}|~{3,})\s*([\w+-]*)/.exec(lines[i]!);
    if (!open) continue;
    const fence = open[1]!;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !lines[i]!.startsWith(fence); i++) body.push(lines[i]!);
    const marker = NOT_RUN.exec((lines[start - 1] ?? '').trim());
    blocks.push({ file, line: start + 1, lang: open[2]!.toLowerCase(), code: body.join('\n'), ...(marker ? { notRun: marker[1]! } : {}) });
  }
  return blocks;
}

const blocks = markdownFiles.flatMap((f) => blocksOf(f, texts.get(f)!));
const runnable = (b: Block) => b.notRun === undefined;
const where = (b: Block, offset = 0) => `${b.file}:${b.line + offset}`;

describe('code blocks of README.md and docs/*.md', () => {
  it('are each run, or marked not-run with a reason', () => {
    const unmarked = blocks.filter((b) => runnable(b) && !TYPED.has(b.lang) && !SHELL.has(b.lang) && b.lang !== 'json');
    expect(unmarked.map((b) => `${where(b)} (${b.lang || 'no language'})`), 'a block no rule runs needs <!-- not-run: reason -->').toEqual([]);
    const empty = blocks.filter((b) => b.notRun === '');
    expect(empty.map((b) => where(b)), 'a not-run marker gives its reason').toEqual([]);
    const skipped = blocks.filter((b) => !runnable(b)).length;
    // Markers are for the odd fragment; most blocks are run.
    expect(skipped, `${skipped} of ${blocks.length} blocks are not run`).toBeLessThanOrEqual(Math.ceil(blocks.length / 4));
    expect(blocks.filter(runnable).length).toBeGreaterThan(20);
  });

  it('type-check (ts and js blocks, one program against the sources)', { timeout: 180_000 }, () => {
    const typed = blocks.filter((b) => runnable(b) && TYPED.has(b.lang));
    const config = ts.getParsedCommandLineOfConfigFile(path.join(root, 'tsconfig.json'), {}, {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      },
    })!;
    const dir = path.join(root, 'test', 'docs', '.blocks'); // virtual: served from memory below
    const files = new Map<string, { block: Block; offset: number }>();
    const sources = new Map<string, string>();
    const prelude = path.join(dir, 'prelude.d.ts');
    sources.set(
      prelude,
      [
        '// Placeholders the docs use without declaring them (see the rules at the top of code-blocks.test.ts).',
        "declare const options: import('flag-proxy').FlagProxyOptions;",
        'declare function sessionOf(req: unknown): { userId: string; roles: string[] } | undefined;',
      ].join('\n'),
    );
    for (const block of typed) {
      const commonJs = /\brequire\(|\bmodule\.exports\b/.test(block.code);
      const ext = block.lang.startsWith('t') ? '.ts' : commonJs ? '.cjs' : '.mjs';
      const name = path.join(dir, `${block.file.replace(/[/.]/g, '_')}_${block.line}${ext}`);
      // `export {}` makes every ts block a module, so blocks never see each other's names.
      sources.set(name, ext === '.ts' ? `${block.code}\nexport {};\n` : block.code);
      files.set(name, { block, offset: 1 });
    }
    const options: ts.CompilerOptions = { ...config.options, noEmit: true, allowJs: true, checkJs: true, incremental: false };
    const host = ts.createCompilerHost(options);
    const { getSourceFile, fileExists, readFile } = host;
    host.fileExists = (f) => sources.has(path.resolve(f)) || fileExists.call(host, f);
    host.readFile = (f) => sources.get(path.resolve(f)) ?? readFile.call(host, f);
    host.getSourceFile = (f, language, ...rest) => {
      const text = sources.get(path.resolve(f));
      return text !== undefined ? ts.createSourceFile(f, text, language, true) : getSourceFile.call(host, f, language, ...rest);
    };
    const program = ts.createProgram({ rootNames: [prelude, ...files.keys()], options, host });
    const problems: string[] = [];
    for (const [name, { block, offset }] of files) {
      const sf = program.getSourceFile(name)!;
      for (const d of [...program.getSyntacticDiagnostics(sf), ...program.getSemanticDiagnostics(sf)]) {
        const { line } = sf.getLineAndCharacterOfPosition(d.start ?? 0);
        problems.push(`${where(block, line + offset)}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`);
      }
    }
    expect(problems).toEqual([]);
    expect(files.size).toBeGreaterThan(10);
  });

  it('name only npm scripts, files and variables that exist (sh blocks)', () => {
    const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: object; bin: object };
    const scripts = Object.keys(pkg.scripts);
    const known = knownVariables();
    const suffixes = Object.keys(ENVIRONMENT_VARIABLE_SUFFIXES).join('|');
    const multiEnv = new RegExp(`^FLAG_ENV_[A-Z0-9_]+_(${suffixes})$`);
    const problems: string[] = [];
    const shells = blocks.filter((b) => runnable(b) && SHELL.has(b.lang));
    for (const block of shells) {
      block.code.split('\n').forEach((raw, i) => {
        const line = raw.replace(/(^|\s)#.*$/, ''); // comments may say anything
        const at = where(block, i + 1);
        for (const m of line.matchAll(/\bnpm (?:run ([\w:-]+)|(start|test)\b)/g)) {
          const script = (m[1] ?? m[2])!;
          if (!scripts.includes(script)) problems.push(`${at}: no npm script "${script}"`);
        }
        for (const m of line.matchAll(/\bnpx (flag-proxy)\b/g)) {
          if (!Object.keys(pkg.bin).includes(m[1]!)) problems.push(`${at}: no bin "${m[1]}" in package.json`);
        }
        for (const m of line.matchAll(/\b(?:npx tsx|npx vitest run|bash)\s+((?:[\w.-]+\/)*[\w.-]+\.?\w*)/g)) {
          if (!existsSync(path.join(root, m[1]!))) problems.push(`${at}: no file ${m[1]}`);
        }
        for (const m of line.matchAll(/(?:^|\s)([A-Z][A-Z0-9_]*)=/g)) {
          const name = m[1]!;
          if (!known.has(name) && !multiEnv.test(name)) problems.push(`${at}: variable ${name} is read by nothing`);
        }
      });
    }
    expect(problems).toEqual([]);
    expect(shells.length).toBeGreaterThan(5);
  });

  it('parse (json blocks)', () => {
    const problems = blocks
      .filter((b) => runnable(b) && b.lang === 'json')
      .flatMap((b) => {
        try {
          JSON.parse(b.code);
          return [];
        } catch (err) {
          return [`${where(b)}: ${(err as Error).message}`];
        }
      });
    expect(problems).toEqual([]);
  });
});

describe('docs/options.md', () => {
  it("lists every option's environment variable", () => {
    const text = texts.get('docs/options.md')!;
    const missing = Object.entries(ENV_NAMES).filter(([, variable]) => !text.includes(`\`${variable}\``));
    expect(missing.map(([option, variable]) => `${option} (${variable})`)).toEqual([]);
  });
});

describe('relative links (and links to this repository) of README.md and docs/*.md', () => {
  it('point at existing files and headings', () => {
    const problems: string[] = [];
    for (const [file, text] of texts) {
      for (const { target, line } of linksOf(text)) {
        const [pathPart, anchor] = target.split('#', 2) as [string, string | undefined];
        const resolved = resolveLink(file, pathPart);
        if (resolved === undefined) continue;
        const at = `${file}:${line}`;
        if (!existsSync(path.join(root, resolved))) {
          if (!PENDING_PAGES.has(resolved)) problems.push(`${at}: ${target} names no file`);
          continue;
        }
        if (anchor === undefined || !resolved.endsWith('.md') || statSync(path.join(root, resolved)).isDirectory()) continue;
        const targetText = texts.get(resolved) ?? readFileSync(path.join(root, resolved), 'utf8');
        if (!slugsOf(targetText).has(anchor)) problems.push(`${at}: ${target} names no heading of ${resolved}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('no longer lists a pending page that has arrived', () => {
    const arrived = [...PENDING_PAGES].filter((p) => existsSync(path.join(root, p)));
    expect(arrived, `take these out of PENDING_PAGES in ${path.relative(root, self)}`).toEqual([]);
  });
});

/** Links outside code (fenced blocks and inline code spans are skipped). */
function linksOf(text: string): { target: string; line: number }[] {
  const found: { target: string; line: number }[] = [];
  let fence: string | undefined;
  text.split('\n').forEach((raw, i) => {
    const open = /^(`{3,}|~{3,})/.exec(raw);
    if (open) {
      if (fence === undefined) fence = open[1];
      else if (raw.startsWith(fence)) fence = undefined;
      return;
    }
    if (fence !== undefined) return;
    const line = raw.replace(/`[^`]*`/g, '');
    for (const m of line.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) found.push({ target: m[1]!, line: i + 1 });
  });
  return found;
}

/** GitHub's anchors for the headings of a Markdown text (duplicates get `-1`, `-2`, …). */
function slugsOf(text: string): Set<string> {
  const slugs = new Set<string>();
  const seen = new Map<string, number>();
  let fence: string | undefined;
  for (const raw of text.split('\n')) {
    const open = /^(`{3,}|~{3,})/.exec(raw);
    if (open) {
      if (fence === undefined) fence = open[1];
      else if (raw.startsWith(fence)) fence = undefined;
      continue;
    }
    const heading = fence === undefined ? /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(raw) : null;
    if (!heading) continue;
    const base = heading[1]!
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    slugs.add(n === 0 ? base : `${base}-${n}`);
  }
  return slugs;
}

/**
 * Every environment variable something in the repository reads: the options' variables
 * (src/config/names.ts), quoted names and `env.NAME` reads in src/ (the CLI, Redis, workers),
 * bench/ and test/, and `$NAME` in .ci/ scripts.
 */
function knownVariables(): Set<string> {
  const known = new Set(KNOWN_ELSEWHERE);
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
      const full = path.join(dir, e.name);
      if (e.isDirectory()) return e.name === 'node_modules' || e.name === 'fixtures' ? [] : walk(full);
      return /\.(ts|js|sh)$/.test(e.name) || dir.endsWith('.ci') ? [full] : [];
    });
  const files = ['src', 'bench', 'test', '.ci'].flatMap((d) => walk(path.join(root, d))).filter((f) => f !== self);
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/['"`]([A-Z][A-Z0-9_]{1,})['"`]|\benv\.([A-Z][A-Z0-9_]+)|\benv\[['"]([A-Z][A-Z0-9_]+)|\$\{?([A-Z][A-Z0-9_]+)/g)) {
      known.add((m[1] ?? m[2] ?? m[3] ?? m[4])!);
    }
  }
  return known;
}
