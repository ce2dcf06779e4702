/**
 * Issue 27, device tokens through the real CLI against the real admin server over mTLS on a real
 * redis-server: `token keygen` writes the key file the server reads, `token issue` gives a token that
 * the engine's verifier accepts, `token list` shows it (never the token), `token revoke` by id and by
 * device makes the verifier refuse it, roles and bad input are refused with nothing changed, and the
 * audit log records issue and revoke without the token string. Expected values follow from the
 * commands run here, by hand.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { TokenRefusedError } from "../../core/index.js";
import type { TestPkiName } from "../certs/fixture.js";
import { failed, ok, run, startE2eServer, type E2eServer, writeContext } from "./qimctl.js";

describe("qimctl token against the real server", { timeout: 180_000 }, () => {
  let dir: string;
  let keys: string;
  let e2e: E2eServer;
  const tenant = randomUUID();
  const ctx: Partial<Record<TestPkiName, string>> = {};

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qimctl-token-"));
    keys = path.join(dir, "token-keys.json");
    const made = ok(await run(["token", "keygen", "--keys", keys]), "keygen");
    assert.deepEqual(made.keys, [made.keyId]);
    assert.equal(statSync(keys).mode & 0o777, 0o600);
    e2e = await startE2eServer(dir, { tokenKeys: keys });
    for (const who of ["admin", "operator", "viewer"] as const) ctx[who] = writeContext(e2e, dir, tenant, who);
  });

  after(async () => {
    await e2e?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const verifier = () => e2e.server.runtime.tokens!.verifier;
  const refused = async (token: string, code: string) => {
    await assert.rejects(verifier().verify(token), (e: unknown) => e instanceof TokenRefusedError && e.code === code);
  };

  it("keygen refuses to overwrite without --rotate and to rotate without --yes off a terminal; nothing changes", async () => {
    const before = readFileSync(keys, "utf8");
    assert.equal(failed(await run(["token", "keygen", "--keys", keys]), 2, "exists").field, "--keys");
    assert.equal(failed(await run(["token", "keygen", "--keys", keys, "--rotate"]), 2, "no --yes").field, "--yes");
    const plan = ok(await run(["token", "keygen", "--keys", keys, "--rotate", "--dry-run"]), "dry run");
    assert.equal(plan.dryRun, true);
    assert.equal(readFileSync(keys, "utf8"), before);
    const text = await run(["token", "keygen", "--keys", keys, "--rotate", "--dry-run"], { json: false });
    assert.equal(text.code, 0);
    assert.doesNotMatch(text.stdout + text.stderr, /"d"/, "no private key on the terminal");
  });

  it("issues, lists, verifies, revokes by id and by device, with roles and bad input refused", async () => {
    const user = randomUUID();
    const issued = ok(await run(["token", "issue", "--user", user, "--device", "phone-1", "--ttl", "2h"], { context: ctx.operator! }), "issue");
    assert.equal(issued.dryRun, false);
    assert.equal(issued.claims.user, user);
    assert.equal(issued.claims.tenant, tenant);
    assert.equal(issued.claims.device, "phone-1");
    assert.equal(issued.claims.expiresAtMs - Math.floor(issued.claims.issuedAtMs / 1000) * 1000, 2 * 3_600_000);
    const token = issued.token as string;
    const claims = await verifier().verify(token, { tenant: tenant as never });
    assert.equal(claims.tokenId, issued.claims.tokenId);
    assert.equal(claims.keyId, issued.claims.keyId);

    // the text form: a sentence, then the token on its own line
    const text = await run(["token", "issue", "--user", user, "--device", "tablet", "--ttl", "90m"], { context: ctx.admin!, json: false });
    assert.equal(text.code, 0);
    const lines = text.stdout.trim().split("\n");
    assert.match(lines[0]!, new RegExp(`^Issued device token [0-9a-f-]{36} for user ${user} device tablet, key `));
    const tablet = lines[1]!;
    await verifier().verify(tablet);

    // refused, nothing issued
    failed(await run(["token", "issue", "--user", user, "--device", "x"], { context: ctx.viewer! }), 6, "viewer");
    assert.equal(failed(await run(["token", "issue", "--user", user, "--device", "x", "--ttl", "31d"], { context: ctx.operator! }), 2, "ttl").field, "--ttl");
    assert.equal(failed(await run(["token", "issue", "--user", user, "--device", "bad device"], { context: ctx.operator! }), 2, "device").field, "--device");
    const dry = ok(await run(["token", "issue", "--user", user, "--device", "x", "--dry-run"], { context: ctx.operator! }), "dry run");
    assert.equal(dry.token, null);

    const listed = ok(await run(["token", "list", "--user", user], { context: ctx.viewer! }), "list");
    assert.deepEqual(listed.tokens.map((t: { device: string }) => t.device).sort(), ["phone-1", "tablet"]);
    assert.equal(listed.nextPageToken, null);
    const paged = ok(await run(["token", "list", "--user", user, "--limit", "1"], { context: ctx.viewer! }), "page 1");
    assert.equal(paged.tokens.length, 1);
    assert.notEqual(paged.nextPageToken, null);

    // revoke by id
    assert.equal(failed(await run(["token", "revoke", "--token-id", issued.claims.tokenId], { context: ctx.operator! }), 2, "no --yes").field, "--yes");
    failed(await run(["token", "revoke", "--token-id", issued.claims.tokenId, "--yes"], { context: ctx.viewer! }), 6, "viewer");
    await verifier().verify(token);
    const r1 = ok(await run(["token", "revoke", "--token-id", issued.claims.tokenId, "--yes"], { context: ctx.operator! }), "revoke");
    assert.deepEqual({ scope: r1.scope, changed: r1.changed, keptUntilMs: r1.keptUntilMs, ids: r1.tokens.map((t: { tokenId: string }) => t.tokenId) },
      { scope: "token", changed: true, keptUntilMs: issued.claims.expiresAtMs, ids: [issued.claims.tokenId] });
    await refused(token, "TOKEN_REVOKED");
    assert.equal(ok(await run(["token", "revoke", "--token-id", issued.claims.tokenId, "--yes"], { context: ctx.operator! }), "re-run").changed, false);
    failed(await run(["token", "revoke", "--token-id", randomUUID(), "--yes"], { context: ctx.operator! }), 3, "unknown id");

    // revoke by device
    const r2 = ok(await run(["token", "revoke", "--user", user, "--device", "tablet", "--yes"], { context: ctx.admin! }), "revoke device");
    assert.equal(r2.scope, "device");
    assert.equal(r2.tokens.length, 1);
    await refused(tablet, "TOKEN_REVOKED");
    assert.deepEqual(ok(await run(["token", "list", "--user", user], { context: ctx.viewer! }), "list after").tokens, []);

    // the audit log: issue and revoke recorded, never the token string
    const records = readFileSync(path.join(dir, "audit.log"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as { rpc: string; result: string; detail: string; principal: string });
    const tokenRecords = records.filter((r) => r.rpc.startsWith("/qim.admin.v1.TokenService/"));
    const issues = tokenRecords.filter((r) => r.rpc.endsWith("/IssueToken") && r.result === "OK" && r.detail.startsWith("issued"));
    assert.equal(issues.length, 2);
    assert.ok(issues.some((r) => r.detail.includes(issued.claims.tokenId)));
    const revokes = tokenRecords.filter((r) => r.rpc.endsWith("/RevokeTokens"));
    assert.ok(revokes.some((r) => r.result === "OK" && r.detail.startsWith(`revoked device token ${issued.claims.tokenId}`)), JSON.stringify(revokes));
    assert.ok(tokenRecords.some((r) => r.result === "PERMISSION_DENIED"), "the viewer's refusal is audited");
    assert.ok(!tokenRecords.some((r) => r.rpc.endsWith("/ListTokens")), "reads are not audited");
    const whole = readFileSync(path.join(dir, "audit.log"), "utf8");
    for (const t of [token, tablet]) {
      assert.ok(!whole.includes(t.split(".")[2]!), "no token signature in the audit log");
      assert.ok(!whole.includes(t.split(".")[1]!), "no token payload in the audit log");
    }
    assert.ok(!e2e.log.some((l) => l.includes(token.split(".")[2]!)), "nor in the server log");
  });
});
