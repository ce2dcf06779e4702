#!/usr/bin/env node
// qimctl: the oclif CLI compiled to dist/cli (package.json "oclif" section: commands in
// ./dist/cli/commands, topics separated by a space). Run `npm run build` first.
import { existsSync, readFileSync } from "node:fs";
import os from "node:os";

const argv = process.argv.slice(2);

/**
 * `qimctl --version` without loading @oclif/core, whose import is most of a start-up here
 * (bench/startup.ts; docs/benchmarks.md): the line oclif prints, config.userAgent
 * "<name>/<version> <platform>-<arch> node-<node version>" (@oclif/core 4 lib/config/config.js),
 * and only where oclif prints it — --version (or an oclif.additionalVersionFlags entry) as the
 * first argument (lib/main.js versionAddition). oclif answers itself when it could differ: hooks,
 * or a plugin with hooks that could run first (one whose only hooks are plugins:* — run when
 * plugins are installed, as @oclif/plugin-autocomplete's — cannot), or a Linux that may be WSL
 * (oclif then prints "wsl" as the platform, after is-wsl's checks, which this does not repeat).
 */
function versionLine() {
  const pjson = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
  const oclif = pjson.oclif ?? {};
  if (!["--version", ...(oclif.additionalVersionFlags ?? [])].includes(argv[0])) return undefined;
  if (oclif.hooks !== undefined || !(oclif.plugins ?? []).every(pluginRunsNothingFirst)) return undefined;
  if (process.platform === "linux" && maybeWsl()) return undefined;
  const arch = os.arch() === "ia32" ? "x86" : os.arch();
  return `${pjson.name}/${pjson.version || "0.0.0"} ${os.platform()}-${arch} node-${process.version}`;
}

/** Whether a plugin (by package name, installed beside us) declares no hook but plugins:* ones. */
function pluginRunsNothingFirst(name) {
  try {
    const pjson = JSON.parse(readFileSync(new URL(`../node_modules/${name}/package.json`, import.meta.url), "utf8"));
    return Object.keys(pjson.oclif?.hooks ?? {}).every((event) => event.startsWith("plugins:"));
  } catch {
    return false; // not found here: oclif resolves it
  }
}

/** Any of the signs is-wsl looks for (before it rules out a container). */
function maybeWsl() {
  if (os.release().toLowerCase().includes("microsoft")) return true;
  try {
    if (readFileSync("/proc/version", "utf8").toLowerCase().includes("microsoft")) return true;
  } catch {
    // no /proc: not WSL
  }
  return existsSync("/proc/sys/fs/binfmt_misc/WSLInterop") || existsSync("/run/WSL");
}

const version = argv[0]?.startsWith("-") ? versionLine() : undefined;
if (version !== undefined) {
  process.stdout.write(`${version}\n`);
} else {
  // the execute entry point alone: help needs no more of oclif; a command loads the rest itself
  const { execute } = await import("@oclif/core/execute");
  await execute({ dir: import.meta.url });
}
