import os from "node:os";
import * as Args from "@oclif/core/args";
import { QimError } from "../../../core/errors/index.js";
import { BaseCommand } from "../../base.js";
import { contextName, defaultConfigPath, ENV, unknownContext } from "../../context.js";
import { updateConfig } from "../../context/config.js";
import type { ContextUseResult } from "../../context/results.js";
import { useText } from "../../context/text.js";

export default class ContextUse extends BaseCommand<typeof ContextUse> {
  static override summary = "Make a named context the current one: the context every command uses by default.";
  static override description = `Sets "current" in $XDG_CONFIG_HOME/qimctl/config.json (written atomically, mode 0600). --context NAME on a single command, or QIMCTL_CONTEXT in a shell, still take precedence over it. Re-running for the context that is already current changes nothing, says so and exits 0.

Exit codes: 0 ok; 2 NAME is not a context name, or the config file is not valid; 3 no such context (the known ones are listed); 4 another qimctl holds the config file's lock.`;
  static override examples = ["<%= config.bin %> <%= command.id %> prod", "<%= config.bin %> <%= command.id %> dev --output json"];
  static override args = {
    name: Args.string({ required: true, description: "the context's name" }),
  };

  async run(): Promise<ContextUseResult> {
    const { args } = await this.parse(ContextUse);
    const name = contextName("NAME", args.name);
    const home = os.homedir();
    const change = updateConfig(process.env, home, (cfg) => {
      if (!Object.hasOwn(cfg.contexts, name)) throw new QimError("NOT_FOUND", unknownContext(name, cfg, defaultConfigPath(process.env, home)), { field: "NAME" });
      const previous = cfg.current;
      cfg.current = name;
      return previous;
    });
    const result: ContextUseResult = {
      config: change.config,
      current: name,
      previous: change.result,
      changed: change.result !== name,
      envOverride: process.env[ENV.context] || null,
      imported: change.imported,
    };
    this.log(useText(result));
    return result;
  }
}
