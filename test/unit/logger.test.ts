import { describe, expect, it } from 'vitest';
import { createDefaultLogger } from 'flag-proxy';
import { createRedactingLogger } from '../../src/logger.js';

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
