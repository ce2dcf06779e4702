/**
 * Issue 29, `qimctl registry apply|diff|get|list|delete` through the real CLI against the real
 * admin server over mTLS on a real redis-server: a file checked whole before anything is sent, the
 * diff, one version step per change (versions counted by hand from the commands run here), the
 * exit codes of an unchanged apply and of a differing diff, roles, compare-and-set, and the send
 * path of the same server applying what was declared.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { TestPkiName } from "../certs/fixture.js";
import { failed, ok, run, startE2eServer, type E2eServer, writeContext } from "./qimctl.js";

describe("qimctl registry against the real server", { timeout: 180_000 }, () => {
  let dir: string;
  let e2e: E2eServer;
  const tenant = randomUUID();
  const ctx: Partial<Record<TestPkiName, string>> = {};
  const file = (name: string, text: string) => {
    const f = path.join(dir, name);
    writeFileSync(f, text);
    return f;
  };

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qimctl-registry-"));
    e2e = await startE2eServer(dir);
    for (const who of ["admin", "operator", "viewer"] as const) ctx[who] = writeContext(e2e, dir, tenant, who);
  });

  after(async () => {
    await e2e?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("diffs, applies once, says when nothing changed, refuses bad files, stale versions and the viewer, prunes and deletes", async () => {
    const op = { context: ctx.operator! };
    const types = file("types.yaml", [
      "# the tenant's custom types",
      "types:",
      "  - custom_type: acme.poll.v1",
      "    preview_template: \"[poll]\"",
      "    minimum_client_version: \"2.4\"",
      "  - custom_type: acme.note.v1",
      "    counts_unread: false",
      "    max_payload_bytes: 1024",
      "",
    ].join("\n"));
    const version = async () => (ok(await run(["registry", "list"], { context: ctx.viewer! }), "list").version as number);

    // before any change: the built-ins only, version 0; the file differs (exit 4, the diff on stdout)
    const listed0 = ok(await run(["registry", "list"], { context: ctx.viewer! }), "list");
    assert.deepEqual(listed0.types.map((t: { custom_type: string }) => t.custom_type), ["call_record", "qim.edit.v1", "qim.group.v1", "qim.membership.v1", "qim.recall.v1"]);
    assert.equal(listed0.version, 0);
    const diff = await run(["registry", "diff", "-f", types], op);
    assert.equal(diff.code, 4);
    assert.equal(diff.json.code, "REGISTRY_DIFFERS");
    assert.deepEqual(JSON.parse(diff.stdout).changes.map((c: { customType: string; action: string }) => [c.customType, c.action]), [["acme.note.v1", "create"], ["acme.poll.v1", "create"]]);
    const dry = ok(await run(["registry", "apply", "-f", types, "--dry-run"], op), "dry run");
    assert.deepEqual([dry.fromVersion, dry.version, dry.changed, dry.dryRun], [0, 0, false, true]);
    assert.equal(await version(), 0, "diff and dry run wrote nothing");

    // bad files: every bad declaration named, exit 2, nothing sent
    const bad = file("bad.yaml", "- custom_type: acme.ok.v1\n- custom_type: Acme/Bad\n- custom_type: acme.typo.v1\n  counts_unred: false\n");
    const refused = failed(await run(["registry", "apply", "-f", bad], op), 2, "bad file");
    assert.match(refused.message, /2 bad declaration\(s\), nothing was sent/);
    assert.match(refused.message, /types\[1\] \(Acme\/Bad\)/);
    assert.match(refused.message, /types\[2\] \(acme\.typo\.v1\).*counts_unred/);
    failed(await run(["registry", "apply", "-f", file("notyaml.yaml", "types: [unclosed\n")], op), 2, "not YAML");
    failed(await run(["registry", "apply", "-f", path.join(dir, "missing.yaml")], op), 2, "no such file");
    failed(await run(["registry", "apply", "-f", types], { context: ctx.viewer! }), 6, "the viewer may not change it");
    assert.equal(await version(), 0, "no refusal wrote anything");

    // apply: version 0 -> 1; again: nothing changed (exit 0; --exit-code: 4 REGISTRY_UNCHANGED)
    const applied = ok(await run(["registry", "apply", "-f", types, "--expect-version", "0"], op), "apply");
    assert.deepEqual([applied.fromVersion, applied.version, applied.changed], [0, 1, true]);
    const text = await run(["registry", "apply", "-f", types], { ...op, json: false });
    assert.equal(text.code, 0);
    assert.match(text.stdout, /acme\.note\.v1 \(unchanged\)\n {2}acme\.poll\.v1 \(unchanged\)\nNothing changed: the registry \(version 1\) already holds this\n$/);
    const unchanged = await run(["registry", "apply", "-f", types, "--exit-code"], op);
    assert.deepEqual([unchanged.code, unchanged.json.code, JSON.parse(unchanged.stdout).changed], [4, "REGISTRY_UNCHANGED", false], "--exit-code: the result, then exit 4");
    assert.equal((await run(["registry", "diff", "-f", types], op)).code, 0, "diff: the registry matches");
    assert.equal(failed(await run(["registry", "apply", "-f", types, "--expect-version", "0"], op), 4, "stale version").code, "REGISTRY_VERSION_CONFLICT");

    // get: text names the source; JSON's type is a registry file entry
    const got = ok(await run(["registry", "get", "--type", "acme.note.v1"], { context: ctx.viewer! }), "get");
    assert.deepEqual(got, {
      type: { custom_type: "acme.note.v1", schema_version: 1, delivery_class: "persistent", counts_unread: false, affects_session_order: true, timeline_visible: true, anchor_mode: "own_seq", preview_template: "[message]", max_payload_bytes: 1024, minimum_client_version: "0.0.0" },
      builtIn: false, declared: true, version: 1,
    });
    failed(await run(["registry", "get", "--type", "acme.none"], { context: ctx.viewer! }), 3, "no such type");

    // the same server's send path applies it: an undeclared type is refused, a note never counts
    const [a, b] = [randomUUID(), randomUUID()];
    const rt = e2e.server.runtime;
    const { group } = await rt.conversations.createGroup({ tenant, owner: a, members: [b] });
    await assert.rejects(rt.conversations.send({ tenant, group, sender: a, payload: new Uint8Array(1), contentType: "acme.vote.v1" }), /not a message type of this tenant/);
    await rt.conversations.send({ tenant, group, sender: a, payload: new Uint8Array(8), contentType: "acme.note.v1" });
    await rt.conversations.send({ tenant, group, sender: a, payload: new Uint8Array(8), contentType: "acme.poll.v1" });
    await assert.rejects(rt.conversations.send({ tenant, group, sender: a, payload: new Uint8Array(1025), contentType: "acme.note.v1" }), /at most 1024 bytes/);
    assert.equal((await rt.conversations.conversationSummary({ tenant, group, user: b })).unread, 1, "the poll counts, the note does not");

    // --prune from stdin-less file with one type: the note is deleted (version 2); delete needs --yes
    const pruned = ok(await run(["registry", "apply", "-f", file("poll.json", JSON.stringify([{ custom_type: "acme.poll.v1", preview_template: "[poll]", minimum_client_version: "2.4" }])), "--prune"], op), "prune");
    assert.deepEqual([pruned.version, pruned.changes.map((c: { action: string }) => c.action)], [2, ["delete", "unchanged"]]);
    await assert.rejects(rt.conversations.send({ tenant, group, sender: a, payload: new Uint8Array(1), contentType: "acme.note.v1" }), /not a message type/, "the deleting node uses the change at once");
    assert.equal(failed(await run(["registry", "delete", "--type", "acme.poll.v1"], op), 2, "no --yes").field, "--yes");
    failed(await run(["registry", "delete", "--type", "acme.note.v1", "--yes"], op), 3, "already deleted");
    assert.equal(ok(await run(["registry", "delete", "--type", "acme.note.v1", "--yes", "--ignore-not-found"], op), "ignore").changed, false);
    failed(await run(["registry", "delete", "--type", "qim.recall.v1", "--yes"], op), 2, "the engine's own type");
    const deleted = ok(await run(["registry", "delete", "--type", "acme.poll.v1", "--yes"], op), "delete");
    assert.deepEqual([deleted.fromVersion, deleted.version], [2, 3]);
    assert.equal(await version(), 3);
  });
});
