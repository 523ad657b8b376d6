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
  /** Makes `buffer` (one `take` gave) free again; anything else, or a second give, is ignored. */
  give(buffer: Buffer): void;
  /** Bytes held by free Buffers. */
  freeBytes(): number;
}

export function createAnswerBuffers(maxFree = MAX_FREE_BUFFERS, maxFreeBytes = MAX_FREE_BYTES): AnswerBuffers {
  const free: ArrayBufferLike[] = [];
  let freeBytes = 0;
  // Memory this pool made and has handed out: only it comes back, and only once per taking.
  const lent = new WeakSet<ArrayBufferLike>();
  return {
    take(size) {
      for (let i = free.length - 1; i >= 0; i -= 1) {
        const memory = free[i] as ArrayBufferLike;
        if (memory.byteLength < size) continue;
        free.splice(i, 1);
        freeBytes -= memory.byteLength;
        lent.add(memory);
        return Buffer.from(memory, 0, size);
      }
      const made = Buffer.allocUnsafeSlow(Math.ceil(Math.max(size, 1) / GRANULE) * GRANULE);
      lent.add(made.buffer);
      return made.subarray(0, size);
    },
    give(buffer) {
      const memory = buffer.buffer;
      if (buffer.byteOffset !== 0 || !lent.has(memory)) return;
      lent.delete(memory);
      if (free.length >= maxFree || freeBytes + memory.byteLength > maxFreeBytes) return;
      free.push(memory);
      freeBytes += memory.byteLength;
    },
    freeBytes: () => freeBytes,
  };
}
