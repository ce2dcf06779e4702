/**
 * The locked output contract (test/cli/contract.ts): the built CLI's commands, flags, args and JSON
 * result shapes must equal cli/command-snapshot.json. A rename, a dropped or an added flag or
 * field fails here with what differs; a deliberate change updates the snapshot with
 * `npm run build && QIM_UPDATE_SNAPSHOTS=1 node scripts/run-tests.mjs cli/snapshot` (and the
 * operator guide), reviewed in the same commit.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { ROOT } from "../e2e/qimctl.js";
import { currentSnapshot, mismatches, readSnapshot, shapeOf, SNAPSHOT_FILE, snapshotText, UPDATE_COMMAND, type Snapshot } from "./contract.js";

/** Paths at which two JSON values differ ("$.commands[group show].flags[group].required: true → false"). */
function differences(a: unknown, b: unknown, where: string): string[] {
  if (Array.isArray(a) && Array.isArray(b)) {
    // commands, flags and args are keyed by id/name: compare them as such, not by position
    const key = (x: unknown) => (typeof x === "object" && x !== null ? ((x as { id?: string; name?: string }).id ?? (x as { name?: string }).name) : undefined);
    if ([...a, ...b].every((x) => key(x) !== undefined)) {
      const left = new Map(a.map((x) => [key(x)!, x]));
      const right = new Map(b.map((x) => [key(x)!, x]));
      return [
        ...[...left.keys()].filter((k) => !right.has(k)).map((k) => `${where}[${k}]: in the snapshot, gone now`),
        ...[...right.keys()].filter((k) => !left.has(k)).map((k) => `${where}[${k}]: new, not in the snapshot`),
        ...[...left.keys()].filter((k) => right.has(k)).flatMap((k) => differences(left.get(k), right.get(k), `${where}[${k}]`)),
      ];
    }
  }
  if (typeof a === "object" && a !== null && typeof b === "object" && b !== null && !Array.isArray(a) && !Array.isArray(b)) {
    const ka = Object.keys(a);
    const kb = Object.keys(b);
    return [
      ...ka.filter((k) => !(k in b)).map((k) => `${where}.${k}: in the snapshot, gone now`),
      ...kb.filter((k) => !(k in a)).map((k) => `${where}.${k}: new, not in the snapshot`),
      ...ka.filter((k) => k in b).flatMap((k) => differences((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], `${where}.${k}`)),
    ];
  }
  return JSON.stringify(a) === JSON.stringify(b) ? [] : [`${where}: ${JSON.stringify(a)} in the snapshot, ${JSON.stringify(b)} now`];
}

describe("the output contract: cli/command-snapshot.json", () => {
  it("every command's id, flags, args and JSON result shape are those of the snapshot", async () => {
    const now = await currentSnapshot();
    if (process.env.QIM_UPDATE_SNAPSHOTS === "1") {
      writeFileSync(SNAPSHOT_FILE, snapshotText(now));
      process.stdout.write(`# wrote ${SNAPSHOT_FILE}: review the diff and update docs/operator-guide.md with it\n`);
      return;
    }
    assert.ok(existsSync(SNAPSHOT_FILE), `${SNAPSHOT_FILE} is missing; create it with: ${UPDATE_COMMAND}`);
    const locked: Snapshot = readSnapshot();
    const diff = differences(locked, now, "$");
    assert.deepEqual(diff, [], [
      "the CLI's commands, flags or JSON results differ from cli/command-snapshot.json:",
      ...diff.map((d) => `  ${d}`),
      "Scripts rely on these. If the change is an accident, undo it. If it is deliberate, update the snapshot and docs/operator-guide.md:",
      `  ${UPDATE_COMMAND}`,
    ].join("\n"));
  });

  it("every destructive command has --yes, and only those (cli/confirm.ts)", async () => {
    for (const c of (await currentSnapshot()).commands) {
      const yes = c.flags.find((f) => f.name === "yes");
      if (c.destructive) assert.deepEqual(yes && [yes.type, yes.char], ["boolean", "y"], `qimctl ${c.id} is destructive: it needs yes: yesFlag`);
      else assert.equal(yes, undefined, `qimctl ${c.id} has --yes but no static destructive: the rule of cli/confirm.ts would not apply to it`);
    }
  });

  it("every command's --help teaches: a summary and at least one example (oclif.manifest.json, as --help reads it)", () => {
    const manifest = JSON.parse(readFileSync(path.join(ROOT, "oclif.manifest.json"), "utf8")) as { commands: Record<string, { id: string; summary?: string; examples?: unknown[] }> };
    const commands = Object.values(manifest.commands);
    assert.ok(commands.length >= 20, `${commands.length} commands in the manifest`);
    const lacking = commands.filter((c) => !c.summary || !c.examples || c.examples.length === 0).map((c) => c.id);
    assert.deepEqual(lacking, [], "commands without a summary or an example");
  });

  it("the shape of a result catches a renamed, a dropped and an added field, and a changed type", async () => {
    const shape = shapeOf([{ group: "g", version: 1, leftAt: null }, { group: "g", version: 2, leftAt: 5 }], "sample");
    assert.deepEqual(shape, { group: "string", leftAt: "null|number", version: "number" });
    assert.deepEqual(mismatches({ group: "g", version: 1, leftAt: 3 }, shape), []);
    assert.deepEqual(mismatches({ groupId: "g", version: 1, leftAt: null }, shape), ["$.group: missing", "$.groupId: not in the snapshot"]);
    assert.deepEqual(mismatches({ group: "g", version: "1", leftAt: null, extra: true }, shape), ["$.extra: not in the snapshot", "$.version: expected number, got string"]);
    assert.throws(() => shapeOf([{ a: 1 }, { b: 1 }], "sample"), /different keys/);
    assert.throws(() => shapeOf([{ list: [] }], "sample"), /empty array/);
  });
});
