/**
 * A file or stdin read whole but bounded (`membership add|remove --from-file`, `registry apply -f`):
 * the read stops as soon as the input passes its byte limit in all or in one line, before the rest
 * is read (`/dev/zero` or a runaway export never fills memory). Bytes are counted, not characters:
 * the limits bound memory.
 */

/** Why an input was not read to its end: one of its two limits. */
export class InputTooLargeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "InputTooLargeError";
  }
}

export interface InputLimits {
  maxBytes: number;
  maxLineBytes: number;
  /** What the refusal says past maxBytes (default: the limit). */
  tooLarge?: (maxBytes: number) => string;
  /** What it says past maxLineBytes in one line. */
  lineTooLong?: (maxLineBytes: number) => string;
}

/** The input as text, or InputTooLargeError at the first byte past a limit (the caller destroys the source on the throw). */
export async function readInput(source: AsyncIterable<Buffer | string>, limits: InputLimits): Promise<string> {
  const chunks: Buffer[] = [];
  let total = 0;
  let line = 0;
  for await (const piece of source) {
    const chunk = typeof piece === "string" ? Buffer.from(piece) : piece;
    total += chunk.length;
    if (total > limits.maxBytes) throw new InputTooLargeError(limits.tooLarge?.(limits.maxBytes) ?? `larger than ${limits.maxBytes} bytes`);
    for (let at = 0; ;) {
      const nl = chunk.indexOf(0x0a, at);
      line += (nl < 0 ? chunk.length : nl) - at;
      if (line > limits.maxLineBytes) throw new InputTooLargeError(limits.lineTooLong?.(limits.maxLineBytes) ?? `a line is longer than ${limits.maxLineBytes} bytes`);
      if (nl < 0) break;
      line = 0;
      at = nl + 1;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}
