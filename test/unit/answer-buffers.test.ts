/**
 * The memory large answers are built in (src/core/answer-buffers.ts): what is given back is
 * handed out again, never twice at once, and never more than the bounds hold.
 */
import { describe, expect, it } from 'vitest';
import { createAnswerBuffers } from '../../src/core/answer-buffers.js';

describe('answer buffers', () => {
  it('hand out the memory given back, for an answer of the same size or a little longer', () => {
    const buffers = createAnswerBuffers();
    const first = buffers.take(290_000);
    expect(first.length).toBe(290_000);
    buffers.give(first);
    expect(buffers.freeBytes()).toBeGreaterThanOrEqual(290_000);
    const second = buffers.take(291_000);
    expect(second.length).toBe(291_000);
    expect(second.buffer).toBe(first.buffer);
    expect(buffers.freeBytes()).toBe(0);
  });

  it('never hand out the same memory to two answers at once', () => {
    const buffers = createAnswerBuffers();
    const first = buffers.take(100_000);
    buffers.give(first);
    // A second give of the same Buffer (or of a view of it) is ignored.
    buffers.give(first);
    buffers.give(Buffer.from(first.buffer, 0, 10));
    const a = buffers.take(100_000);
    const b = buffers.take(100_000);
    expect(a.buffer).toBe(first.buffer);
    expect(b.buffer).not.toBe(first.buffer);
    a.fill(1);
    b.fill(2);
    expect(a.every((byte) => byte === 1)).toBe(true);
  });

  it('ignore a Buffer given back again after its memory was taken by another answer', () => {
    const buffers = createAnswerBuffers();
    const first = buffers.take(100_000);
    buffers.give(first);
    const second = buffers.take(100_000);
    expect(second.buffer).toBe(first.buffer);
    // A late second give of the first answer's Buffer must not free what the second one uses.
    buffers.give(first);
    expect(buffers.freeBytes()).toBe(0);
    expect(buffers.take(100_000).buffer).not.toBe(second.buffer);
  });

  it('ignore memory they did not hand out', () => {
    const buffers = createAnswerBuffers();
    const foreign = Buffer.allocUnsafeSlow(200_000);
    buffers.give(foreign);
    buffers.give(Buffer.from('a small pooled Buffer'));
    expect(buffers.freeBytes()).toBe(0);
    expect(buffers.take(100_000).buffer).not.toBe(foreign.buffer);
  });

  it('make new memory when every free Buffer is too short, and keep the short one for later', () => {
    const buffers = createAnswerBuffers();
    const short = buffers.take(50_000);
    buffers.give(short);
    const long = buffers.take(500_000);
    expect(long.buffer).not.toBe(short.buffer);
    expect(buffers.take(40_000).buffer).toBe(short.buffer);
  });

  it('keep at most the free Buffers and bytes they are given as bounds; the rest goes to the collector', () => {
    const byCount = createAnswerBuffers(2, Number.POSITIVE_INFINITY);
    const taken = [byCount.take(1000), byCount.take(1000), byCount.take(1000)];
    for (const buffer of taken) byCount.give(buffer);
    const again = [byCount.take(1000), byCount.take(1000), byCount.take(1000)].map((b) => b.buffer);
    expect(taken.filter((b) => again.includes(b.buffer))).toHaveLength(2);

    const byBytes = createAnswerBuffers(100, 64 * 1024);
    const big = [byBytes.take(40_000), byBytes.take(40_000)];
    for (const buffer of big) byBytes.give(buffer);
    // Each is 48 KiB (a multiple of 16 KiB): only one fits in 64 KiB.
    expect(byBytes.freeBytes()).toBe(48 * 1024);
  });
});
