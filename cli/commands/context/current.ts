import os from "node:os";
import { QimError } from "../../../core/errors/index.js";
import { BaseCommand } from "../../base.js";
import { defaultConfigPath, knownNames, selectContext } from "../../context.js";
import { readConfig, readTextIfExists } from "../../context/config.js";
import { contextCurrent, type ContextCurrentResult } from "../../context/results.js";
import { currentText } from "../../context/text.js";

export default class ContextCurrent extends BaseCommand<typeof ContextCurrent> {
  static override summary = "Print the context commands use now: its name, endpoint, tenant and certificate paths.";
  static override description = `The context every command connects with when it is given no --context: QIMCTL_CONTEXT, else the current context of the config file, else the old single context file — as context show without NAME, but quick: the paths are printed as they are configured (absolute), no certificate or key file is opened. The first line of the table is the context's name; scripts read .name of --output json.

Reads the config file only; connects to nothing. Exit codes: 0 ok; 2 the config file or the context file is not valid; 3 no context is in use (the known ones are listed).`;
  static override examples = [
    "<%= config.bin %> <%= command.id %>",
    { description: "The name alone, in a script", command: "<%= config.bin %> <%= command.id %> --output json | jq -r .name" },
  ];

  async run(): Promise<ContextCurrentResult> {
    const env = process.env;
    const home = os.homedir();
    const sel = selectContext({ env, home, readText: readTextIfExists });
    if (sel.kind === "none") {
      const config = defaultConfigPath(env, home);
      const cfg = readConfig(config);
      throw new QimError("NOT_FOUND", cfg
        ? `no context is current in ${config}; ${knownNames(cfg.contexts)} (qimctl context use NAME)`
        : `no context: ${config} does not exist and neither does the old context file; add one with qimctl context set NAME --endpoint HOST:PORT …`);
    }
    const result = contextCurrent(sel);
    this.log(currentText(result));
    return result;
  }
}
