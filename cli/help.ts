/**
 * qimctl's help: oclif's, plus what every operator needs on the first screen — how the connection
 * is resolved, examples, and the exit codes (defined once in cli/exit-codes.ts).
 */
// the help entry point only: `qimctl … --help` loads no more of oclif than it needs (bench/startup.ts)
import type { Command } from "@oclif/core/command";
import { Help } from "@oclif/core/help";
import { exitCodeHelp } from "./exit-codes.js";

const ROOT_EXAMPLES = `First time? A private stack on this machine (redis-server, dev PKI, admin server; writes the context):
  $ qimctl demo          # dev up, then a narrated scenario through the real API, every step checked
  $ qimctl dev up        # the same stack for your own commands; qimctl dev status, qimctl dev down

Point qimctl at a server once (a named context in ~/.config/qimctl/config.json, made current):
  $ qimctl certs issue --name alice --role operator --write-context --endpoint localhost:7443 --tenant 8f14e45f-ceea-4a67-9c1b-2d3e4f5a6b7c

Then:
  $ qimctl group create --owner 1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f --member 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b
  $ qimctl membership add --group 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 --user 9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d --dry-run
  $ qimctl history --group 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 --as 9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d --json`;

const CONNECTION = `Each setting comes from, in order: the flag (--endpoint --ca --cert --key --tenant --insecure),
the environment (QIMCTL_ENDPOINT QIMCTL_CA QIMCTL_CERT QIMCTL_KEY QIMCTL_TENANT), then the context:
--context NAME (else QIMCTL_CONTEXT) names a context of $XDG_CONFIG_HOME/qimctl/config.json, and a
value with a / or ending in .json a context file (JSON { endpoint, ca, cert, key, tenant, insecure };
relative paths are relative to the file); without either, the current context (qimctl context list,
context use NAME). Before config.json exists, $XDG_CONFIG_HOME/qimctl/context.json is read instead.`;

export default class QimHelp extends Help {
  protected override async showRootHelp(): Promise<void> {
    await super.showRootHelp();
    this.log(this.section("CONNECTION", CONNECTION));
    this.log("");
    this.log(this.section("EXAMPLES", ROOT_EXAMPLES));
    this.log("");
    this.log(this.section("EXIT CODES", exitCodeHelp()));
    this.log("");
  }

  protected override formatCommand(command: Command.Loadable): string {
    return `${super.formatCommand(command)}\n\n${this.section("EXIT CODES", "0 ok, 1 internal, 2 usage, 3 not found, 4 conflict, 5 connection, 6 auth/permission, 130 interrupted (details: qimctl --help)")}`;
  }
}
