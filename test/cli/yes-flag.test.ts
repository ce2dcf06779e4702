/**
 * Issue 24: the operator guide's list of destructive commands (its "Destructive commands" section,
 * the commands named before "One rule applies") is exactly the set of commands that declare a
 * `--yes` flag in the built CLI (oclif.manifest.json) — a command that gains or loses --yes
 * without the guide saying so fails here.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { ROOT } from "../e2e/qimctl.js";

/** The command ids the guide lists (`dev down --purge` is `dev down`), as "dev down". */
export function guideYesCommands(guide: string): string[] {
  const section = /^## Destructive commands\n([\s\S]*?)^One rule applies/m.exec(guide);
  assert.ok(section, "docs/operator-guide.md: a \"## Destructive commands\" section whose list ends before \"One rule applies\"");
  return [...section[1]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!.split(" --")[0]!.trim()).sort();
}

describe("--yes: the guide's list and the commands", () => {
  it("the guide names exactly the commands that declare --yes", () => {
    const manifest = JSON.parse(readFileSync(path.join(ROOT, "oclif.manifest.json"), "utf8")) as { commands: Record<string, { id: string; flags: Record<string, unknown> }> };
    const withYes = Object.values(manifest.commands).filter((c) => "yes" in c.flags).map((c) => c.id.split(":").join(" ")).sort();
    assert.ok(withYes.length >= 6, `${withYes.length} commands with --yes`);
    assert.deepEqual(guideYesCommands(readFileSync(path.join(ROOT, "docs", "operator-guide.md"), "utf8")), withYes);
  });

  it("the guide's list is read as written: a flag after a command is not part of its id", () => {
    assert.deepEqual(guideYesCommands("## Destructive commands\n\n`b x`, `a y --purge` and `c`\ndo things.\nOne rule applies to all of them:"), ["a y", "b x", "c"]);
  });
});
