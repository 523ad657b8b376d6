/**
 * The memory large answers are built in, used again once their response is written.
 *
 * An answer of a large flag set is copied into one malloc'd Buffer (see `LARGE_ANSWER_BYTES` in
 * toggle-answers.ts). Left to the garbage collector, each such Buffer is freed only at the next
 * young collection, and V8 forces one only when its young Buffers hold twice the largest
 * semi-space (32 MiB in node 20): at 5000 flags (290 kB answers) about 20 MB of answers already
 * sent waited in malloc's heap, which kept the pages after they were freed. A Buffer given back
 * here once its response is written is the next large answer's, so the memory stays at what the
 * answers being written at once need.
 *
 * Giving a Buffer back is a promise that nothing reads it any more: only the response writer
 * does it, and only when node's own socket has written it (see `writesToKernel` in http.ts).
 * A Buffer never given back (cached, handed to other code, or its response cut short) is simply
 * collected as before.
 */

/** Free Buffers kept at most, and their bytes at most. */
export const MAX_FREE_BUFFERS = 4;
export const MAX_FREE_BYTES = 4 * 1024 * 1024;
/** Buffers are made a multiple of this long, so that one fits answers a little longer than the first. */
const GRANULE = 16 * 1024;

/** The pool of one evaluation service; no state is shared between services. */
export interface AnswerBuffers {
  /** A Buffer of exactly `size` bytes, its content undefined: a free one, or a new one. */
  take(size: number): Buffer;
  /**
   * Makes `buffer` (the very Buffer one `take` gave) free again. Anything else is ignored: a Buffer
   * given back already (even once its memory was taken again), a view made over it, a foreign one.
   */
  give(buffer: Buffer): void;
  /** Bytes held by free Buffers. */
  freeBytes(): number;
  /** Whether `buffer` is one `take` gave and nobody gave back yet. */
  owns(buffer: Buffer): boolean;
}

export function createAnswerBuffers(maxFree = MAX_FREE_BUFFERS, maxFreeBytes = MAX_FREE_BYTES): AnswerBuffers {
  const free: ArrayBufferLike[] = [];
  let freeBytes = 0;
  // The Buffers handed out and not given back yet: each taking makes a new one, so a Buffer given
  // back twice cannot free memory that was taken again since.
  const lent = new WeakSet<Buffer>();
  const lend = (buffer: Buffer): Buffer => {
    lent.add(buffer);
    return buffer;
  };
  return {
    take(size) {
      for (let i = free.length - 1; i >= 0; i -= 1) {
        const memory = free[i] as ArrayBufferLike;
        if (memory.byteLength < size) continue;
        free.splice(i, 1);
        freeBytes -= memory.byteLength;
        return lend(Buffer.from(memory, 0, size));
      }
      return lend(Buffer.allocUnsafeSlow(Math.ceil(Math.max(size, 1) / GRANULE) * GRANULE).subarray(0, size));
    },
    give(buffer) {
      if (!lent.has(buffer)) return;
      lent.delete(buffer);
      const memory = buffer.buffer;
      if (free.length >= maxFree || freeBytes + memory.byteLength > maxFreeBytes) return;
      free.push(memory);
      freeBytes += memory.byteLength;
    },
    freeBytes: () => freeBytes,
    owns: (buffer) => lent.has(buffer),
  };
}
