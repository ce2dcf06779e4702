/**
 * The decisions of the dev stack that need no process: whose named context may be replaced,
 * which processes are the stack's (a reused pid or a sibling data dir is never taken for ours),
 * the Redis version floor; and the one pass over /proc that sorts live processes by identity.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { findProcesses, isAlive, versionAtLeast } from "../../cli/dev/process.js";
import type { ConfigFile } from "../../cli/context.js";
import { authorityKind, authorityLine, baseContextName, contextIsOurs, devPaths, planNamedContext, redisIdentity, serverIdentity } from "../../cli/dev/stack.js";

const tmp = mkdtempSync(path.join(os.tmpdir(), "qimctl-dev-unit-"));
after(() => rmSync(tmp, { recursive: true, force: true }));

describe("dev stack decisions", () => {
  it("the named context: its own name kept; absent written; another dev stack's never overwritten (base-2 then) unless its data dir is gone; one written by hand left alone; current only when none is", () => {
    const p = devPaths(path.join(tmp, "a"));
    const other = devPaths(path.join(tmp, "b"));
    const ours = { endpoint: "localhost:1", dev: true, dataDir: p.dataDir };
    const cfg: ConfigFile = { current: null, contexts: {} };
    assert.deepEqual(planNamedContext(cfg, "dev", ours, p), { name: "dev", written: true, note: null });
    assert.deepEqual(cfg, { current: "dev", contexts: { dev: ours } }, "absent: written, and current (there was none)");

    const prod = { endpoint: "prod:7443" };
    const withProd: ConfigFile = { current: "prod", contexts: { prod } };
    assert.equal(planNamedContext(withProd, "dev", ours, p).written, true);
    assert.equal(withProd.current, "prod", "another context is current: it stays current");

    const theirs: ConfigFile = { current: null, contexts: { dev: { endpoint: "x:1" } } };
    const plan = planNamedContext(theirs, "dev", ours, p);
    assert.equal(plan.written, false);
    assert.match(plan.note!, /not written by qimctl dev up/);
    assert.deepEqual(theirs, { current: null, contexts: { dev: { endpoint: "x:1" } } }, "nothing changed");

    // the other stack's data dir does not exist: its context can reach nothing, it is taken over
    const otherGone: ConfigFile = { current: "dev", contexts: { dev: { endpoint: "localhost:2", dev: true, dataDir: other.dataDir } } };
    const replaced = planNamedContext(otherGone, "dev", ours, p);
    assert.deepEqual([replaced.name, replaced.written], ["dev", true]);
    assert.match(replaced.note!, /pointed at the dev stack in .*b, whose data dir is gone/);
    assert.equal(contextIsOurs(otherGone.contexts.dev, p), true);
    assert.equal(contextIsOurs(otherGone.contexts.dev, other), false);

    // the other stack's data dir exists (down or up): its context stays, this stack gets dev-2
    mkdirSync(other.dataDir, { recursive: true });
    const theirsDev = { endpoint: "localhost:2", dev: true, dataDir: other.dataDir };
    const otherDown: ConfigFile = { current: "dev", contexts: { dev: theirsDev, "dev-2": { endpoint: "typed:1" } } };
    const second = planNamedContext(otherDown, "dev", ours, p);
    assert.deepEqual([second.name, second.written], ["dev-3", true], "dev-2 was written by hand: skipped too");
    assert.match(second.note!, /the context "dev" belongs to the dev stack in .*b: this stack's context is "dev-3"/);
    assert.deepEqual(otherDown.contexts.dev, theirsDev, "the other stack's context is untouched");
    assert.equal(otherDown.current, "dev", "the current context stays");
    writeFileSync(other.stateFile, "{}");
    assert.deepEqual(planNamedContext(otherDown, "dev", { ...ours, endpoint: "localhost:9" }, p), { name: "dev-3", written: true, note: null }, "its own name is kept on the next dev up");
    assert.equal(otherDown.contexts["dev-3"]!.endpoint, "localhost:9");
  });

  it("the base name of a stack's context: dev for a data dir named dev, dev-<dir name> for another, as given for the demo", () => {
    assert.equal(baseContextName(devPaths(path.join(".qim", "dev"))), "dev");
    assert.equal(baseContextName(devPaths("/srv/other-project/.qim/dev")), "dev", "a dir named dev anywhere (a clash is settled by dev-2 …)");
    assert.equal(baseContextName(devPaths(path.join(".qim", "dev2"))), "dev-dev2");
    assert.equal(baseContextName(devPaths("/tmp/my stack.json")), "dev-my-stack-json");
    assert.equal(baseContextName(devPaths(path.join(".qim", "demo")), "demo"), "demo");
  });

  it("processes are recognised by their arguments, never those of a sibling data dir", () => {
    const p = devPaths("/tmp/x/dev");
    const sibling = devPaths("/tmp/x/dev2");
    const redisTitle = ["/usr/bin/redis-server 127.0.0.1:40117 qimctl-dev /tmp/x/dev"];
    const redisArgv = ["redis-server", "--port", "1", "--proc-title-template", "{title} {listen-addr} qimctl-dev /tmp/x/dev"];
    assert.equal(redisIdentity(p)(redisTitle), true);
    assert.equal(redisIdentity(p)(redisArgv), true, "before redis sets its title");
    assert.equal(redisIdentity(sibling)(redisTitle), false);
    assert.equal(redisIdentity(devPaths("/tmp/x/de"))(redisTitle), false);
    assert.equal(redisIdentity(p)(["redis-server 127.0.0.1:6379"]), false, "a system Redis");
    assert.equal(redisIdentity(p)(["vim", "/tmp/x/dev"]), false);
    const server = ["/usr/bin/node", "/repo/bin/qim-admin-server.js", "--redis", "127.0.0.1:1", "--audit-log", "/tmp/x/dev/audit.log"];
    assert.equal(serverIdentity(p)(server), true);
    assert.equal(serverIdentity(sibling)(server), false);
    assert.equal(serverIdentity(p)(["/usr/bin/node", "other.js", "/tmp/x/dev/audit.log"]), false);
  });

  it("Redis 6.2 or newer; the authority line", () => {
    assert.equal(versionAtLeast("7.0.15", [6, 2]), true);
    assert.equal(versionAtLeast("6.2.0", [6, 2]), true);
    assert.equal(versionAtLeast("6.0.16", [6, 2]), false);
    assert.equal(versionAtLeast("5.0.7", [6, 2]), false);
    assert.equal(authorityKind("redis-hash (development fallback, not an authority guarantee)"), "redis-hash");
    assert.equal(authorityKind("cassandra 127.0.0.1:9042 keyspace qim (consistency LOCAL_QUORUM)"), "cassandra");
    assert.equal(authorityLine({ authority: "cassandra 127.0.0.1:9042 keyspace qim (consistency LOCAL_QUORUM)", authorityKind: "cassandra" }),
      "conversation-set authority: cassandra at 127.0.0.1:9042 keyspace qim (consistency LOCAL_QUORUM)");
    assert.match(authorityLine({ authority: "redis-hash (…)", authorityKind: "redis-hash" }), /^conversation-set authority: redis-hash \(development fallback/);
  });
});

describe("findProcesses", () => {
  it("sorts live processes by identity in one pass: each list holds exactly the processes its identity accepts", async () => {
    const mark = `qimctl-find-${process.pid}-${Date.now()}`;
    const start = (kind: string) => spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)", mark, kind], { stdio: "ignore" });
    const children = [start("a"), start("b"), start("b")];
    try {
      const pids = children.map((c) => c.pid!);
      const is = (kind: string) => (argv: readonly string[]) => argv.includes(mark) && argv.at(-1) === kind;
      const found = findProcesses({ a: is("a"), b: is("b"), none: is("c") });
      assert.deepEqual(Object.keys(found).sort(), ["a", "b", "none"]);
      assert.deepEqual(found.a, [pids[0]]);
      assert.deepEqual([...found.b].sort((x, y) => x - y), [pids[1]!, pids[2]!].sort((x, y) => x - y));
      assert.deepEqual(found.none, []);
      assert.deepEqual(findProcesses({}), {}, "no identity, nothing to sort");
    } finally {
      for (const c of children) c.kill("SIGKILL");
      await Promise.all(children.map((c) => (c.exitCode !== null || c.signalCode !== null ? undefined : new Promise((r) => c.once("exit", r)))));
    }
    assert.ok(children.every((c) => !isAlive(c.pid)));
  });
});
