/**
 * The yes/no question destructive commands ask on a terminal (STYLE: confirm on a TTY only; `--yes`
 * for scripts). The question goes to stderr, so that stdout stays the command's output.
 */
import { createInterface } from "node:readline/promises";
import { InterruptedError } from "./exit-codes.js";

export async function confirm(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await new Promise<string>((resolve, reject) => {
      rl.once("SIGINT", () => reject(new InterruptedError("interrupted")));
      rl.question(question).then(resolve, reject);
    });
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}
