/**
 * What the `dev` commands and `demo` share: the --data-dir and --secure-redis flags, and a catch() that turns a
 * DevStackError into its message, hints and exit code (everything else goes through BaseCommand's
 * classifyError as usual).
 */
import type { Command } from "@oclif/core/command";
import { ExitError } from "@oclif/core/errors";
import * as Flags from "@oclif/core/flags";
import { BaseCommand } from "../base.js";
import { DEFAULT_DEV_DIR, DevStackError } from "./stack.js";

export const dataDirFlag = (defaultDir = DEFAULT_DEV_DIR) =>
  Flags.string({ char: "d", default: defaultDir, description: "the dev stack's directory: Redis data, PKI, logs, state (dev.json) and context (context.json)" });

export const secureRedisFlag = Flags.boolean({
  description: "a production-like redis-server: TLS only, ACL user qim with a random password in <data-dir>/redis.password (0600), default user off",
});

export abstract class DevCommand<T extends typeof Command> extends BaseCommand<T> {
  override async catch(err: Error & { exitCode?: number }): Promise<never> {
    if (err instanceof DevStackError) {
      this.printFailure({ exitCode: err.exitCode, code: err.code, message: err.message, hints: err.hints });
      throw new ExitError(err.exitCode);
    }
    return super.catch(err);
  }
}
