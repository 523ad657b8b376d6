import { describe, expect, it } from 'vitest';
import { createDefaultLogger } from 'flag-proxy';
import { createRedactingLogger } from '../../src/logger.js';
import { weakSecretWarnings } from '../../src/config/secrets-view.js';

describe('createDefaultLogger', () => {
  it('writes one JSON line per message when json is set, from the level up', () => {
    const lines: string[] = [];
    const logger = createDefaultLogger({ level: 'info', json: true, write: (line) => lines.push(line) });
    logger.debug('hidden');
    logger.info('shown', { a: 1 });
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 'info', message: 'shown', args: [{ a: 1 }] });
  });

  it('writes plain LEVEL: lines by default at warn and above', () => {
    const lines: string[] = [];
    const logger = createDefaultLogger({ write: (line) => lines.push(line) });
    logger.info('hidden');
    logger.warn('careful', new Error('why'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^WARN: careful Error: why/);
  });
});

describe('createRedactingLogger', () => {
  it('replaces every secret in messages, strings, errors and nested objects', () => {
    const lines: string[] = [];
    const inner = createDefaultLogger({ level: 'debug', write: (line) => lines.push(line) });
    const logger = createRedactingLogger(inner, ['s3cret', 'key-1']);
    logger.debug('token s3cret', { headers: { authorization: 'key-1' } }, new Error('bad key-1'), ['s3cret']);
    expect(lines.join('\n')).not.toMatch(/s3cret|key-1/);
    expect(lines.join('\n')).toContain('[REDACTED]');
  });
});

describe('createRedactingLogger with short secrets', () => {
  const run = (secrets: string[], ...line: unknown[]) => {
    const lines: string[] = [];
    const logger = createRedactingLogger(createDefaultLogger({ level: 'debug', write: (l) => lines.push(l) }), secrets);
    logger.warn(...(line as [string, ...unknown[]]));
    return lines[0]!;
  };

  it('does not mangle a line with a one-character key, yet redacts the key where it stands alone', () => {
    expect(run(['a'], 'Upstream flag API error: fetch failed', { authorization: 'a', note: 'a ok' })).toBe(
      'WARN: Upstream flag API error: fetch failed {"authorization":"[REDACTED]","note":"[REDACTED] ok"}',
    );
  });

  it('redacts a two-character key only as a whole token, in text, errors and nested values', () => {
    const line = run(['k1'], 'key k1 refused; ok1 and k12 are other words', new Error('bad key: k1'), ['k1']);
    expect(line).toContain('key [REDACTED] refused; ok1 and k12 are other words');
    expect(line).toContain('Error: bad key: [REDACTED]');
    expect(line).toContain('["[REDACTED]"]');
  });

  it('still redacts a long secret inside a larger word', () => {
    expect(run(['s3cret-token-value'], 'Bearer:s3cret-token-valueX')).toBe('WARN: Bearer:[REDACTED]X');
  });
});

describe('weakSecretWarnings', () => {
  it('names each option holding a secret shorter than 16 characters, once, without the secret', () => {
    const warnings = weakSecretWarnings({ flagApiToken: 'short', clientKeys: ['a', 'b', 'long-enough-client-key'], serverSideTokens: [] });
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toContain('flagApiToken (FLAG_API_TOKEN)');
    expect(warnings[1]).toContain('2 of clientKeys (FLAG_PROXY_CLIENT_KEYS)');
    expect(warnings.join('\n')).toContain('16 characters');
    expect(warnings.join('\n')).not.toMatch(/\bshort\b|\ba\b/);
    expect(weakSecretWarnings({ flagApiToken: 'x'.repeat(16), clientKeys: ['y'.repeat(16)], serverSideTokens: ['z'.repeat(16)] })).toEqual([]);
  });
});
