/**
 * Two dev stacks side by side with real processes: the second gets its own named context
 * (dev-dev2) and never touches the first's; drill rebuild writes its report into the data dir of
 * the stack whose context it used, whatever the context is named (the named one, or the data dir's
 * context file), and into $XDG_STATE_HOME/qimctl/reports otherwise; certs issue without a CA in
 * its default dir names each stack's own CA with the exact command; dev down --purge --dry-run
 * lists and changes nothing, and --purge removes what the stack wrote — its data, its drill
 * reports, its context — and nothing else (a file of the user's in the data dir, the other stack,
 * a report elsewhere). The working directory and XDG dirs are the test's temp dir.
 */
import assert from "node:assert/strict";
import { randomUUID, X509Certificate } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { alive, killMentioning, ok, processesMentioning, qimctl } from "./helpers.js";

describe("two dev stacks: contexts, drill reports, certs issue, dev down --purge", { timeout: 300_000 }, () => {
  const tmp = mkdtempSync(path.join(os.tmpdir(), "qimctl-dev-purge-"));
  const env = { XDG_CONFIG_HOME: path.join(tmp, "config"), XDG_STATE_HOME: path.join(tmp, "state") };
  const config = path.join(tmp, "config", "qimctl", "config.json");
  const stateReports = path.join(tmp, "state", "qimctl", "reports");
  const dev = path.join(tmp, ".qim", "dev");
  const dev2 = path.join(tmp, ".qim", "dev2");
  const run = (args: string[], opts: { json?: boolean } = {}) => qimctl(args, { env, cwd: tmp, ...opts });
  const readConfig = () => JSON.parse(readFileSync(config, "utf8"));

  after(async () => {
    for (const d of [dev, dev2]) await run(["dev", "down", "--data-dir", d]);
    const left = killMentioning(tmp);
    rmSync(tmp, { recursive: true, force: true });
    assert.deepEqual(left, [], "a test left processes behind");
  });

  /** A drill over one user (the stack is empty: nothing to differ); returns where its report went. */
  const drill = async (args: string[], what: string): Promise<string> => {
    const r = ok(await run(["drill", "rebuild", "--user", randomUUID(), "--yes", ...args]), what);
    assert.equal(r.ok, true);
    assert.equal(r.reportPath, path.join(path.dirname(r.reportPath), `qim-drill-${r.drillId}.json`));
    assert.equal(JSON.parse(readFileSync(r.reportPath, "utf8")).drillId, r.drillId, "the report is written where it says");
    return r.reportPath;
  };

  it("a second stack gets dev-dev2; reports follow the stack's context; certs issue names each CA; purge removes only the stack's own", async () => {
    const first = ok(await run(["dev", "up", "--data-dir", dev]), "dev up (first stack)");
    assert.deepEqual([first.namedContext.name, first.namedContext.written, first.namedContext.current], ["dev", true, "dev"]);
    const devContext = readConfig().contexts.dev;

    const second = ok(await run(["dev", "up", "--data-dir", dev2]), "dev up (second stack)");
    assert.deepEqual([second.namedContext.name, second.namedContext.written, second.namedContext.current], ["dev-dev2", true, "dev"], "its own context; the current one stays");
    const text = await run(["dev", "up", "--data-dir", dev2], { json: false });
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /"dev-dev2" in .*config\.json, not current \(the current context is dev\)/);
    assert.match(text.stdout, /Use this stack with --context dev-dev2/);
    const cfg = readConfig();
    assert.deepEqual(Object.keys(cfg.contexts).sort(), ["dev", "dev-dev2"]);
    assert.deepEqual(cfg.contexts.dev, devContext, "the first stack's context is untouched");
    assert.deepEqual([cfg.contexts["dev-dev2"].endpoint, cfg.contexts["dev-dev2"].dataDir], [second.endpoint, dev2]);

    // drill reports: into the data dir of the stack whose context was used, by name or by file
    const viaName = await drill(["--context", "dev-dev2"], "drill through the named context dev-dev2");
    assert.equal(path.dirname(viaName), dev2);
    const viaCurrent = await drill([], "drill through the current context (dev)");
    assert.equal(path.dirname(viaCurrent), dev);
    const viaFile = await drill(["--context", path.join(dev2, "context.json")], "drill through dev2's context file");
    assert.equal(path.dirname(viaFile), dev2);
    // an endpoint given by flags may be any server: the XDG state dir
    const viaFlags = await drill(["--endpoint", second.endpoint, "--ca", second.pki.ca, "--cert", second.pki.cert, "--key", second.pki.key, "--tenant", second.tenant], "drill with flags");
    assert.equal(path.dirname(viaFlags), stateReports);
    const drillText = await run(["drill", "rebuild", "--user", randomUUID(), "--yes", "--context", "dev-dev2"], { json: false });
    assert.equal(drillText.code, 0, drillText.stderr);
    assert.match(drillText.stdout, new RegExp(`^  report: +${dev2.replace(/[.]/g, "\\.")}/qim-drill-[0-9a-f-]+\\.json$`, "m"), "table mode prints the path");

    // certs issue with no CA in its default dir (.qim/pki here): each stack's own CA, as a command to run
    const refused = await run(["certs", "issue", "--name", "alice", "--role", "operator"]);
    assert.equal(refused.code, 2, refused.stderr);
    assert.ok(!existsSync(path.join(tmp, ".qim", "pki")), "nothing written");
    for (const d of [dev, dev2]) assert.ok(refused.json.message.includes(`qimctl certs issue --name alice --role operator --output json --dir ${d}/pki`), refused.json.message);
    assert.doesNotMatch(refused.json.message, /certs init/);
    const issued = ok(await run(["certs", "issue", "--name", "alice", "--role", "operator", "--dir", path.join(dev2, "pki")]), "the suggested command");
    const ca = new X509Certificate(readFileSync(path.join(dev2, "pki", "ca.crt")));
    assert.ok(new X509Certificate(readFileSync(issued.certPath)).verify(ca.publicKey), "signed by the second stack's CA");
    // no dev stack known (another working dir, no contexts): the usual advice
    const elsewhere = mkdtempSync(path.join(tmp, "elsewhere-"));
    const plain = await qimctl(["certs", "issue", "--name", "bob", "--role", "viewer"], { env: { XDG_CONFIG_HOME: elsewhere }, cwd: elsewhere });
    assert.equal(plain.code, 2, plain.stderr);
    assert.match(plain.json.message, /--ca-cert: cannot read .*ca\.crt: ENOENT \(create a CA with `qimctl certs init`/);

    // dev2: stopped without --purge keeps its context; a dry run lists and changes nothing
    const stopped = ok(await run(["dev", "down", "--data-dir", dev2]), "dev down dev2");
    assert.deepEqual(stopped.contextsRemoved, []);
    assert.ok(readConfig().contexts["dev-dev2"], "a stop keeps the context");
    const before = readdirSync(dev2).sort();
    const plan = ok(await run(["dev", "down", "--data-dir", dev2, "--purge", "--dry-run"]), "dev down --purge --dry-run (no --yes, no terminal)");
    assert.deepEqual([plan.dryRun, plan.purged, plan.contextsRemoved, plan.stopped], [true, false, ["dev-dev2"], []]);
    for (const f of [viaName, viaFile, path.join(dev2, "pki"), path.join(dev2, "redis"), path.join(dev2, "context.json"), path.join(dev2, "redis.log"), path.join(dev2, "server.log")]) {
      assert.ok(plan.removed.includes(f), `the plan names ${f}: ${JSON.stringify(plan.removed)}`);
    }
    assert.deepEqual(readdirSync(dev2).sort(), before, "a dry run removes nothing");
    assert.ok(readConfig().contexts["dev-dev2"], "nor the context");
    const planText = await run(["dev", "down", "--data-dir", dev2, "--purge", "--dry-run"], { json: false });
    assert.equal(planText.code, 0, planText.stderr);
    assert.match(planText.stdout, /^Dry run for the dev stack in .*dev2: nothing stopped or removed\.$/m);
    assert.match(planText.stdout, /^  would remove the contexts: dev-dev2$/m);
    assert.match(planText.stdout, /^    .*dev2\/qim-drill-[0-9a-f-]+\.json$/m);
    const unasked = await run(["dev", "down", "--data-dir", dev2, "--purge"]);
    assert.equal(unasked.code, 2, "--purge without --yes and without a terminal");
    assert.ok(existsSync(viaName));

    const purged = ok(await run(["dev", "down", "--data-dir", dev2, "--purge", "--yes"]), "dev down --purge dev2");
    assert.deepEqual(purged.contextsRemoved, ["dev-dev2"]);
    assert.ok(!existsSync(dev2), "the data dir held only the stack's files: gone");
    assert.ok(purged.removed.includes(dev2));
    assert.deepEqual(Object.keys(readConfig().contexts), ["dev"], "the first stack's context stays");
    assert.equal(readConfig().current, "dev");
    assert.ok(existsSync(viaFlags), "a report outside the data dir is not provably the stack's: kept");

    // the first stack, still running: --purge stops it, then removes what it wrote, not the user's file
    writeFileSync(path.join(dev, "notes.txt"), "mine\n");
    mkdirSync(path.join(dev, "mine"));
    const purgedRunning = ok(await run(["dev", "down", "--data-dir", dev, "--purge", "--yes"]), "dev down --purge of a running stack");
    assert.equal(purgedRunning.wasRunning, true);
    assert.ok(!alive(first.server.pid) && !alive(first.redis.pid), "stopped first");
    assert.deepEqual(processesMentioning(dev), []);
    assert.deepEqual(readdirSync(dev).sort(), ["mine", "notes.txt"], "only the user's files are left");
    assert.ok(!existsSync(viaCurrent), "its drill report is removed");
    assert.deepEqual(readConfig(), { current: null, contexts: {} });
  });
});
