import os from "node:os";
import path from "node:path";
import * as Args from "@oclif/core/args";
import { QimError } from "../../../core/errors/index.js";
import { BaseCommand } from "../../base.js";
import { contextName, defaultConfigPath, isContextPath, knownNames, parseContextFile, selectContext, unknownContext, type ContextSelection } from "../../context.js";
import { readConfig, readTextIfExists } from "../../context/config.js";
import { showContext } from "../../context/inspect.js";
import type { ContextShowResult } from "../../context/results.js";
import { showText } from "../../context/text.js";

export default class ContextShow extends BaseCommand<typeof ContextShow> {
  static override summary = "Show a context: endpoint, tenant, and what its CA and client certificate say — never its key.";
  static override description = `Without NAME: the context commands use now (QIMCTL_CONTEXT, else the current context, else the old single context file). NAME is a context of the config file, or a context file when it has a / or ends in .json.

For the CA and the client certificate it prints the path and what the certificate says: subject (CN = who you are, OU = your role), issuer, expiry (flagged when expired or not yet valid) and SHA-256 fingerprint (the one the server's audit log records). For the key it prints the path and the file's mode, flagged when others than its owner may read it; the key file itself is never opened, so its content cannot leak into a terminal, a log or a CI artefact.

Reads files only; connects to nothing. Exit codes: 0 ok; 2 NAME is neither a context name nor a path, or the config file is not valid; 3 no such context (the known ones are listed), or no context is in use.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %>",
    "<%= config.bin %> <%= command.id %> prod --output json",
    "<%= config.bin %> <%= command.id %> ./.qim/dev/context.json",
  ];
  static override args = {
    name: Args.string({ description: "a context's name, or a context file (a path with a / or ending in .json); default: the context in use" }),
  };

  async run(): Promise<ContextShowResult> {
    const { args } = await this.parse(ContextShow);
    const env = process.env;
    const home = os.homedir();
    const config = defaultConfigPath(env, home);
    let sel: ContextSelection;
    let selectedBy = "argument";
    if (args.name !== undefined && isContextPath(args.name)) {
      const file = path.resolve(args.name);
      const text = readTextIfExists(file);
      if (text === undefined) throw new QimError("NOT_FOUND", `context file ${file} does not exist`, { field: "NAME" });
      sel = { kind: "file", path: file, origin: "argument", context: parseContextFile(text, file) };
    } else if (args.name !== undefined) {
      const name = contextName("NAME", args.name);
      const cfg = readConfig(config);
      if (!cfg || !Object.hasOwn(cfg.contexts, name)) throw new QimError("NOT_FOUND", unknownContext(name, cfg, config), { field: "NAME" });
      sel = { kind: "named", name, config, origin: "argument", context: cfg.contexts[name]! };
    } else {
      sel = selectContext({ env, home, readText: readTextIfExists });
      if (sel.kind === "none") {
        const cfg = readConfig(config);
        throw new QimError("NOT_FOUND", cfg
          ? `no context is current in ${config}; ${knownNames(cfg.contexts)} (qimctl context use NAME)`
          : `no context: ${config} does not exist and neither does the old context file; add one with qimctl context set NAME --endpoint HOST:PORT …`);
      }
      selectedBy = sel.origin;
    }
    const result = showContext(sel, selectedBy, sel.kind === "named" ? (readConfig(config)?.current ?? null) : null);
    this.log(showText(result));
    return result;
  }
}
