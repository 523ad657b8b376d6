import { describe, expect, it } from 'vitest';
import { createKeyTable } from '../../src/multi-env/keys.js';

describe('createKeyTable', () => {
  const table = createKeyTable([
    { name: 'production', keys: ['prod-browser-key-0001', 'prod-server-token-0001'] },
    { name: 'staging', keys: ['stage-key-é-🔑', 'prod-browser-key-0002'] },
  ]);

  it('finds the environment of every configured key, multi-byte characters included', () => {
    expect(table.lookup('prod-browser-key-0001')).toBe(0);
    expect(table.lookup('prod-server-token-0001')).toBe(0);
    expect(table.lookup('stage-key-é-🔑')).toBe(1);
    expect(table.lookup('prod-browser-key-0002')).toBe(1);
  });

  it('finds none for a key that is not configured, however close, or for no key', () => {
    for (const presented of ['prod-browser-key-000', 'prod-browser-key-00011', 'Prod-browser-key-0001', 'stage-key-e-🔑', '', ' prod-browser-key-0001']) {
      expect(table.lookup(presented), presented).toBe(-1);
    }
    expect(table.lookup(undefined)).toBe(-1);
    expect(createKeyTable([]).lookup('prod-browser-key-0001')).toBe(-1);
  });

  it('refuses a key configured for two environments', () => {
    expect(() => createKeyTable([{ name: 'a', keys: ['same-key'] }, { name: 'b', keys: ['same-key'] }])).toThrow(/both "a" and "b"/);
  });
});
