/**
 * Shell completion from @oclif/plugin-autocomplete through the real `qimctl` process: `autocomplete
 * bash|zsh` builds the completion functions from the CLI's commands and flags into the cache dir
 * (XDG_CACHE_HOME here, a temp dir), `autocomplete script bash` prints the line a shell sources;
 * bash then completes qimctl's own topics, commands and flags (the completion function is run the
 * way bash runs it on TAB, with COMP_WORDS and COMP_CWORD).
 */
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { run } from "./qimctl.js";

describe("qimctl autocomplete (bash, zsh)", { timeout: 120_000 }, () => {
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let cache: string;

  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qimctl-autocomplete-"));
    env = { XDG_CACHE_HOME: path.join(dir, "cache"), XDG_CONFIG_HOME: path.join(dir, "config") };
    cache = path.join(dir, "cache", "qimctl", "autocomplete");
  });

  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** What bash offers on TAB after `words` (the last word is the one being completed), each once. */
  const complete = (setupLine: string, words: string[]): string[] => {
    const quoted = words.map((w) => `'${w}'`).join(" ");
    const script = `${setupLine}\nCOMP_WORDS=(${quoted}); COMP_CWORD=${words.length - 1}; _qimctl_autocomplete; printf '%s\\n' "\${COMPREPLY[@]}"`;
    const out = execFileSync("bash", ["--norc", "--noprofile", "-c", script], { encoding: "utf8" });
    // the plugin offers a topic once per command under it; readline shows each candidate once
    return [...new Set(out.split("\n").filter((l) => l !== ""))].sort();
  };

  it("autocomplete bash builds the completion and says how to install it; the script line sources it; bash completes qimctl's commands and flags", async () => {
    const built = await run(["autocomplete", "bash"], { env, json: false });
    assert.equal(built.code, 0, built.stderr);
    assert.match(built.stdout, /printf "\$\(qimctl autocomplete script bash\)" >> ~\/\.bashrc/);
    const functions = readFileSync(path.join(cache, "functions", "bash", "qimctl.bash"), "utf8");
    for (const id of ["context:use", "context:set", "user:groups", "membership:add"]) assert.match(functions, new RegExp(`^${id} `, "m"), id);

    const script = await run(["autocomplete", "script", "bash"], { env, json: false });
    assert.equal(script.code, 0, script.stderr);
    const setupLine = script.stdout.trim();
    assert.match(setupLine, new RegExp(`^QIMCTL_AC_BASH_SETUP_PATH=${cache.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}/bash_setup && test -f`));

    const top = complete(setupLine, ["qimctl", ""]);
    for (const topic of ["autocomplete", "context", "dev", "group", "membership", "user"]) assert.ok(top.includes(topic), `${topic} in ${top.join(" ")}`);
    assert.deepEqual(complete(setupLine, ["qimctl", "con"]), ["connections", "context", "conversation"]);
    assert.deepEqual(complete(setupLine, ["qimctl", "cont"]), ["context"]);
    assert.deepEqual(complete(setupLine, ["qimctl", "context", ""]), ["current", "delete", "list", "set", "show", "use"]);
    assert.deepEqual(complete(setupLine, ["qimctl", "user", "g"]), ["groups"]);
    assert.deepEqual(complete(setupLine, ["qimctl", "context", "set", "--e"]), ["--endpoint"]);
    assert.deepEqual(complete(setupLine, ["qimctl", "user", "groups", "--u"]), ["--user"]);
  });

  it("autocomplete zsh builds a zsh completion function with the same commands", async () => {
    const built = await run(["autocomplete", "zsh"], { env, json: false });
    assert.equal(built.code, 0, built.stderr);
    assert.match(built.stdout, /printf "\$\(qimctl autocomplete script zsh\)" >> ~\/\.zshrc/);
    const fn = path.join(cache, "functions", "zsh", "_qimctl");
    const text = readFileSync(fn, "utf8");
    assert.match(text, /^#compdef qimctl/);
    assert.match(text, /^_qimctl_context\(\) \{/m);
    assert.match(text, /"groups\[List the groups a user is or was in/);
    const script = await run(["autocomplete", "script", "zsh"], { env, json: false });
    assert.match(script.stdout, /QIMCTL_AC_ZSH_SETUP_PATH=.*zsh_setup/);
    // where zsh is installed, the function must at least parse
    if (spawnSync("zsh", ["--version"]).status === 0) {
      const check = spawnSync("zsh", ["-n", fn], { encoding: "utf8" });
      assert.equal(check.status, 0, check.stderr);
    }
    assert.ok(existsSync(path.join(cache, "zsh_setup")));
  });
});
