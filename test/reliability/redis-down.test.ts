/**
 * Reliability, fault 3: Redis unreachable under a running admin server (issue 6, "Faults").
 *
 * A real admin server over mTLS on a redis-server with AOF (so that the data is back after the
 * restart). Redis is killed; then every kind of RPC — a read, a membership change, a send, the
 * projection status and the dispatch audit — must answer UNAVAILABLE (domain code UNAVAILABLE,
 * no stack) before the client's deadline: the deadline is the bound, so a call that hangs until
 * it fails with DEADLINE_EXCEEDED fails the test ("promptly", with no wall-clock assertion). The
 * real `qimctl` does the same commands and exits with the connection code (5) saying in words
 * that the store is unreachable. Redis comes back; the server recovers by itself (polled a
 * bounded number of times, no restart) and a membership change on the same group succeeds.
 * Then the same for a Redis that hangs (SIGSTOP: connections open, no answer) instead of dying.
 *
 *   node scripts/run-tests.mjs reliability/redis-down
 *   QIM_SOAK=1 node scripts/run-tests.mjs reliability/redis-down   (four more outages, 2 to 25 s long)
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, it } from "node:test";
import * as grpc from "@grpc/grpc-js";
import { connectAdmin, errorCode, type AdminClient } from "../../admin-api/client.js";
import { failed, ok, run, startE2eServer, type E2eServer } from "../e2e/qimctl.js";
import { sleep, SOAK } from "./common.js";

/** The client deadline (gRPC client and `qimctl --timeout`): every failure must come before it. */
const DEADLINE_S = 10;

describe("reliability: Redis unreachable under the admin server", { timeout: SOAK ? 600_000 : 180_000 }, () => {
  it("every RPC kind and the CLI answer UNAVAILABLE before the deadline; the server recovers by itself", async (t) => {
    const say = (line: string) => { t.diagnostic(line); console.log(`# ${line}`); };
    const dir = mkdtempSync(path.join(os.tmpdir(), "qim-redis-down-"));
    let e2e: E2eServer | undefined;
    let client: AdminClient | undefined;
    try {
      e2e = await startE2eServer(dir, { redis: { appendonly: true, appendfsync: "always" } });
      const { pki, endpoint, redis, server } = e2e;
      const tenant = randomUUID();
      const context = path.join(dir, "context-admin.json");
      writeFileSync(context, JSON.stringify({ endpoint, ca: pki.ca.certPath, cert: pki.admin.certPath, key: pki.admin.keyPath, tenant }));
      client = connectAdmin({
        endpoint, caPem: readFileSync(pki.ca.certPath), certPem: readFileSync(pki.admin.certPath), keyPem: readFileSync(pki.admin.keyPath), deadlineMs: DEADLINE_S * 1000,
      });
      const admin = client;
      const owner = randomUUID();
      const g = await admin.createGroup({ tenant, group: "", owner, members: [randomUUID()] });
      const group = g.group;
      await admin.sendMessage({ tenant, group, sender: owner, text: "before the outage", clientMessageId: "", mentions: [] });

      /** Every RPC kind at once: each must fail with UNAVAILABLE, none may run into the deadline. */
      const allUnavailable = async (how: string): Promise<string> => {
        const calls: [string, () => Promise<unknown>][] = [
          ["GetGroup (read)", () => admin.getGroup({ tenant, group })],
          ["ReadHistory (read)", () => admin.readHistory({ tenant, group, user: owner, after: 0n, limit: 0 })],
          ["AddMembers (membership change)", () => admin.addMembers({ tenant, group, users: [randomUUID()], dryRun: false })],
          ["SendMessage (send)", () => admin.sendMessage({ tenant, group, sender: owner, text: "during the outage", clientMessageId: "", mentions: [] })],
          ["ProjectionService/GetStatus", () => admin.getProjectionStatus({})],
          ["DispatchService/Audit", () => admin.auditDispatch({})],
        ];
        const outcomes = await Promise.all(calls.map(async ([what, call]) => {
          const started = process.hrtime.bigint();
          const err = await call().then(() => null, (e: unknown) => e as grpc.ServiceError);
          return { what, err, ms: Number(process.hrtime.bigint() - started) / 1e6 };
        }));
        for (const { what, err } of outcomes) {
          assert.ok(err, `${what} succeeded with Redis ${how}`);
          assert.notEqual(err.code, grpc.status.DEADLINE_EXCEEDED, `${what} ran into the client deadline of ${DEADLINE_S} s with Redis ${how}: ${err.details}`);
          assert.equal(err.code, grpc.status.UNAVAILABLE, `${what} with Redis ${how}: ${grpc.status[err.code]} ${err.details}`);
          assert.equal(errorCode(err), "UNAVAILABLE", what);
          assert.match(err.details, /the store is unreachable/, what);
          assert.doesNotMatch(err.details, /\n\s+at /, `${what}: no stack in the answer`);
        }
        // the server log: one line per failed request, no stack trace (an outage is not a bug)
        const failures = e2e!.log.filter((l) => / failed: /.test(l));
        assert.ok(failures.length >= calls.length, e2e!.log.join("\n"));
        for (const l of failures) assert.doesNotMatch(l, /\n\s+at /, `a stack trace in the server log: ${l}`);
        return `gRPC with Redis ${how}, deadline ${DEADLINE_S} s: ${outcomes.map((o) => `${o.what} UNAVAILABLE after ${Math.round(o.ms)} ms`).join("; ")}`;
      };

      /** The server reconnects by itself: a membership change succeeds within a bounded number of attempts, no restart. */
      const recovers = async (how: string): Promise<string> => {
        let change: Awaited<ReturnType<AdminClient["addMembers"]>> | undefined;
        const newcomer = randomUUID();
        let attempts = 0;
        for (; attempts < 100 && !change; attempts++) {
          change = await admin.addMembers({ tenant, group, users: [newcomer], dryRun: false }).catch(() => undefined);
          if (!change) await sleep(100);
        }
        assert.ok(change, `a membership change succeeds once Redis is back (${how}), without restarting the server`);
        assert.equal(change.outcome, "committed");
        const members = await admin.listMembers({ tenant, group, limit: 0, cursor: "" });
        assert.ok(members.members.some((m) => m.userId === newcomer && m.state === "ACTIVE"), "the change is there");
        assert.ok(members.members.some((m) => m.userId === owner), "the data from before the outage is there");
        return `recovered after Redis was ${how}: AddMembers committed at seq ${change.eventConversationSeq} on attempt ${attempts}`;
      };

      await redis.kill9();
      try {
        say(await allUnavailable("killed (connection refused)"));
        const refusals = (await server.audit.tail(50)).filter((e) => e.result === "UNAVAILABLE");
        for (const rpc of ["/AddMembers", "/SendMessage"]) assert.ok(refusals.some((e) => e.rpc.endsWith(rpc)), `the failed ${rpc} is audited as UNAVAILABLE`);

        // the CLI: exit 5 (connection), JSON code UNAVAILABLE, and in words for a person
        const timeout = ["--timeout", String(DEADLINE_S)];
        const cli: [string, string[]][] = [
          ["group show", ["group", "show", "--group", group]],
          ["membership add", ["membership", "add", "--group", group, "--user", randomUUID()]],
          ["message send", ["message", "send", "--group", group, "--as", owner, "--text", "during the outage"]],
          ["projection status", ["projection", "status"]],
          ["dispatch audit", ["dispatch", "audit"]],
        ];
        const runs = await Promise.all([
          ...cli.map(([, args]) => run([...args, ...timeout], { context })),
          run(["membership", "add", "--group", group, "--user", randomUUID(), ...timeout], { context, json: false }),
        ]);
        cli.forEach(([what], i) => {
          const f = failed(runs[i]!, 5, `qimctl ${what}`);
          assert.equal(f.code, "UNAVAILABLE", `qimctl ${what}: ${JSON.stringify(f)}`);
          assert.match(f.message, /the store is unreachable/, `qimctl ${what}`);
        });
        const text = runs[cli.length]!;
        assert.equal(text.code, 5, text.stderr);
        assert.equal(text.stdout, "");
        assert.match(text.stderr, /^Error: .*the store is unreachable/m, text.stderr);
        assert.doesNotMatch(text.stderr, /\n\s+at /, "no stack trace");
        say(`qimctl with Redis down: ${cli.map(([what]) => what).join(", ")} → exit 5 UNAVAILABLE; in words: ${text.stderr.trim().split("\n")[0]}`);
      } finally {
        await redis.restart();
      }

      say(await recovers("killed and restarted on its AOF"));
      const viaCli = ok(await run(["membership", "add", "--group", group, "--user", randomUUID(), "--timeout", String(DEADLINE_S)], { context }), "qimctl membership add after the outage");
      assert.equal(viaCli.outcome, "committed");

      // hung rather than gone: SIGSTOP, so connections stay open and nothing answers — the
      // server's own command timeout must turn that into UNAVAILABLE before the client's deadline
      process.kill(redis.pid, "SIGSTOP");
      try {
        say(await allUnavailable("hung (SIGSTOP)"));
      } finally {
        process.kill(redis.pid, "SIGCONT");
      }
      say(await recovers("hung and continued"));

      // soak: more outages, each lasting longer before the calls go out (ioredis's reconnect
      // back-off grows to 2 s between attempts; the answers must still come before the deadline)
      if (SOAK) {
        for (const [i, waitS] of [2, 8, 15, 25].entries()) {
          const hang = i % 2 === 1;
          const how = `${hang ? "hung" : "killed"} for ${waitS} s`;
          if (hang) process.kill(redis.pid, "SIGSTOP"); else await redis.kill9();
          try {
            await sleep(waitS * 1000);
            say(await allUnavailable(how));
          } finally {
            if (hang) process.kill(redis.pid, "SIGCONT"); else await redis.restart();
          }
          say(await recovers(how));
        }
      }
    } finally {
      client?.close();
      await e2e?.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
