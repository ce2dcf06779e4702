import os from "node:os";
import { BaseCommand } from "../../base.js";
import { defaultConfigPath, defaultContextPath, ENV } from "../../context.js";
import { readConfig, readTextIfExists } from "../../context/config.js";
import { contextEntry, type ContextListResult } from "../../context/results.js";
import { listText } from "../../context/text.js";

export default class ContextList extends BaseCommand<typeof ContextList> {
  static override summary = "List the named contexts of the config file and which one is current.";
  static override description = `A context is where commands connect and as whom: endpoint, CA, client certificate and key, tenant (and insecure for a plaintext dev server). The named contexts live in one config file, $XDG_CONFIG_HOME/qimctl/config.json (~/.config/qimctl/config.json), with the current one marked *: the context every command uses unless --context NAME (or QIMCTL_CONTEXT) names another, or --context PATH a context file. qimctl context set adds one, context use switches, dev up adds "dev".

While there is no config file, commands still read the old single context file $XDG_CONFIG_HOME/qimctl/context.json; list then names it (legacyFile), and the first change imports it as the context "default".

Reads files only; connects to nothing. Exit codes: 0 ok (also when there are no contexts); 2 the config file is not valid.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %>",
    "<%= config.bin %> <%= command.id %> --output json",
  ];

  async run(): Promise<ContextListResult> {
    const env = process.env;
    const home = os.homedir();
    const config = defaultConfigPath(env, home);
    const cfg = readConfig(config);
    const legacy = defaultContextPath(env, home);
    const result: ContextListResult = {
      config,
      configExists: cfg !== undefined,
      current: cfg?.current ?? null,
      contexts: cfg ? Object.keys(cfg.contexts).sort().map((n) => contextEntry(n, cfg.contexts[n]!, cfg.current, config)) : [],
      legacyFile: !cfg && readTextIfExists(legacy) !== undefined ? legacy : null,
      envOverride: env[ENV.context] || null,
    };
    this.log(listText(result));
    return result;
  }
}
