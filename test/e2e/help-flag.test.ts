/**
 * Issue 24: `-h` is help everywhere, as `--help` is (package.json oclif.additionalHelpFlags), for every
 * command of the manifest and the autocomplete plugin's, through the real qimctl process: the
 * command's help on stdout, exit 0, nothing run.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { ROOT, run } from "./qimctl.js";

const manifest = JSON.parse(readFileSync(path.join(ROOT, "oclif.manifest.json"), "utf8")) as { commands: Record<string, { id: string; flags: Record<string, { char?: string }> }> };
const commands = Object.values(manifest.commands);

describe("-h is help for every command", { timeout: 300_000 }, () => {
  it("no flag takes -h for itself", () => {
    for (const c of commands) for (const [name, f] of Object.entries(c.flags)) assert.notEqual(f.char, "h", `${c.id} --${name} takes -h`);
  });

  it("qimctl -h, and qimctl <command> -h for each command: its help (as --help prints it), exit 0", async () => {
    assert.ok(commands.length >= 50, `${commands.length} commands in the manifest`);
    const argvs = [[], ...commands.map((c) => c.id.split(":")), ["autocomplete"]];
    const pending = [...argvs];
    const worker = async () => {
      for (let argv = pending.shift(); argv; argv = pending.shift()) {
        const [short, long] = await Promise.all([run([...argv, "-h"], { json: false }), run([...argv, "--help"], { json: false })]);
        const what = `qimctl ${[...argv, "-h"].join(" ")}`;
        assert.equal(short.code, 0, `${what}: exit ${short.code}\n${short.stderr}`);
        assert.equal(short.stdout, long.stdout, `${what} prints what --help does`);
        assert.match(short.stdout, /USAGE/, what);
        if (argv.length > 0) assert.ok(short.stdout.includes(`$ qimctl ${argv.join(" ")}`), `${what}: the command's own help\n${short.stdout}`);
      }
    };
    await Promise.all([worker(), worker()]);
  });
});
