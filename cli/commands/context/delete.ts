import { existsSync } from "node:fs";
import os from "node:os";
import * as Args from "@oclif/core/args";
import { BaseCommand } from "../../base.js";
import { contextName, defaultConfigPath } from "../../context.js";
import { updateConfig } from "../../context/config.js";
import type { ContextDeleteResult } from "../../context/results.js";
import { deleteText } from "../../context/text.js";

export default class ContextDelete extends BaseCommand<typeof ContextDelete> {
  static override summary = "Delete a named context from the config file (its certificate and key files are left alone).";
  static override description = `Removes the context from $XDG_CONFIG_HOME/qimctl/config.json (written atomically, mode 0600); the files it pointed at are not touched. Deleting the current context leaves no context current, and says so: commands then need --context, or qimctl context use NAME. A context that does not exist (already deleted) changes nothing, says so with the known ones, and exits 0.

Exit codes: 0 deleted, or there was none of that name; 2 NAME is not a context name, or the config file is not valid; 4 another qimctl holds the config file's lock.`;
  static override examples = ["<%= config.bin %> <%= command.id %> staging", "<%= config.bin %> <%= command.id %> staging --output json"];
  static override args = {
    name: Args.string({ required: true, description: "the context's name" }),
  };

  async run(): Promise<ContextDeleteResult> {
    const { args } = await this.parse(ContextDelete);
    const name = contextName("NAME", args.name);
    const env = process.env;
    const home = os.homedir();
    let result: ContextDeleteResult;
    if (!existsSync(defaultConfigPath(env, home))) {
      // nothing to delete: never create the config file (nor import the old context file) for that
      result = { config: defaultConfigPath(env, home), name, deleted: false, wasCurrent: false, current: null, remaining: [] };
    } else {
      const change = updateConfig(env, home, (cfg) => {
        const deleted = Object.hasOwn(cfg.contexts, name);
        const wasCurrent = deleted && cfg.current === name;
        if (deleted) delete cfg.contexts[name];
        if (wasCurrent) cfg.current = null;
        return { deleted, wasCurrent, current: cfg.current, remaining: Object.keys(cfg.contexts).sort() };
      });
      result = { config: change.config, name, ...change.result };
    }
    this.log(deleteText(result));
    return result;
  }
}
