/**
 * The one rule for destructive and bulk commands (STYLE "The CLI": a plan first, confirmation on a
 * terminal, `--yes` for scripts, never a prompt when stdin is not a TTY):
 *
 * - with `--yes`, or when the invocation changes nothing (`--dry-run`), no question;
 * - on a terminal, a yes/no question (on stderr, so that stdout stays the command's output);
 *   anything but yes ends the command with exit 130 and nothing changed;
 * - when stdin is not a terminal and there is no `--yes`: exit 2 (usage) before anything is sent,
 *   naming `--yes`. A script that forgot the flag must not go ahead unasked, nor hang on a prompt.
 *
 * A command opts in with `static destructive` (BaseCommand applies the rule in init(), before
 * run()) and a `yes: yesFlag`; test/cli/snapshot.test.ts checks that each such command has it.
 */
import { createInterface } from "node:readline/promises";
import * as Flags from "@oclif/core/flags";
import { InterruptedError, UsageError } from "./exit-codes.js";

/**
 * What a destructive command declares. Plain data: oclif copies it into oclif.manifest.json, and
 * the output contract (cli/command-snapshot.json) records it.
 */
export interface Destructive {
  /** What it does, for the refusal: "… pass --yes to <action>". */
  action: string;
  /** A boolean flag with which the invocation changes nothing (`dry-run`): no --yes needed then. */
  exceptWith?: string;
  /** A boolean flag without which the command is not destructive at all (`dev down`: `purge`). */
  onlyWith?: string;
}

export const yesFlag = Flags.boolean({ char: "y", description: "do not ask for confirmation; required when stdin is not a terminal (there is never a prompt then)" });

/**
 * Whether this invocation must ask first. Throws the usage error when it would have to ask and
 * cannot (stdin is not a terminal).
 */
export function mustConfirm(d: Destructive | undefined, flags: Readonly<Record<string, unknown>>, stdinIsTerminal: boolean): boolean {
  if (!d || flags.yes === true) return false;
  if (d.exceptWith !== undefined && flags[d.exceptWith] === true) return false;
  if (d.onlyWith !== undefined && flags[d.onlyWith] !== true) return false;
  if (!stdinIsTerminal) throw new UsageError("--yes", `stdin is not a terminal, so there is no prompt: pass --yes to ${d.action} (nothing was changed)`);
  return true;
}

/** Asks on the terminal; anything but y/yes throws (exit 130, "not confirmed; nothing changed"). */
export async function confirmOrStop(question: string): Promise<void> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  let answer: string;
  try {
    answer = await new Promise<string>((resolve, reject) => {
      rl.once("SIGINT", () => reject(new InterruptedError("interrupted")));
      rl.question(question).then(resolve, reject);
    });
  } finally {
    rl.close();
  }
  if (!/^y(es)?$/i.test(answer.trim())) throw new InterruptedError("not confirmed; nothing changed");
}
