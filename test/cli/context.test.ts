import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, mkdirSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { defaultConfigPath, defaultContextPath, isContextPath, parseConfigFile, parseContextFile, resolveConnection, selectContext, type ConnectionFlags } from "../../cli/context.js";
import { updateConfig } from "../../cli/context/config.js";
import { UsageError } from "../../cli/exit-codes.js";

const dir = mkdtempSync(path.join(os.tmpdir(), "qimctl-context-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const readText = (file: string) => {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
};

function writeContext(file: string, body: unknown): string {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(body));
  return file;
}

const T_CTX = "11111111-1111-4111-8111-111111111111";
const T_ENV = "22222222-2222-4222-8222-222222222222";
const T_FLAG = "33333333-3333-4333-8333-333333333333";

describe("connection resolution: flags > env > context file", () => {
  const home = path.join(dir, "home");
  const xdgContext = writeContext(path.join(dir, "xdg", "qimctl", "context.json"), {
    endpoint: "ctx-host:7443", ca: "pki/ca.crt", cert: "/abs/alice.crt", key: "pki/alice.key", tenant: T_CTX, insecure: false,
  });
  const env = { XDG_CONFIG_HOME: path.join(dir, "xdg") };

  it("the default context file is $XDG_CONFIG_HOME/qimctl/context.json, else ~/.config/qimctl/context.json", () => {
    assert.equal(defaultContextPath(env, home), xdgContext);
    assert.equal(defaultContextPath({}, home), path.join(home, ".config", "qimctl", "context.json"));
    assert.equal(defaultContextPath({ XDG_CONFIG_HOME: "relative/ignored" }, home), path.join(home, ".config", "qimctl", "context.json"));
  });

  it("takes everything from the context file, paths relative to the file", () => {
    const r = resolveConnection({ flags: {}, env, home, readText });
    assert.equal(r.contextPath, xdgContext);
    assert.deepEqual(r.endpoint, { value: "ctx-host:7443", source: "context", origin: `context file ${xdgContext}` });
    assert.equal(r.ca?.value, path.join(dir, "xdg", "qimctl", "pki", "ca.crt"));
    assert.equal(r.cert?.value, "/abs/alice.crt");
    assert.equal(r.key?.value, path.join(dir, "xdg", "qimctl", "pki", "alice.key"));
    assert.equal(r.tenant?.value, T_CTX);
    assert.deepEqual(r.insecure, { value: false, source: "context", origin: `context file ${xdgContext}` });
  });

  it("env beats the context file; flags beat env", () => {
    const withEnv = { ...env, QIMCTL_ENDPOINT: "env-host:1", QIMCTL_TENANT: T_ENV, QIMCTL_CA: "/env/ca.crt" };
    const r1 = resolveConnection({ flags: {}, env: withEnv, home, readText });
    assert.deepEqual(r1.endpoint, { value: "env-host:1", source: "env", origin: "QIMCTL_ENDPOINT" });
    assert.equal(r1.tenant?.value, T_ENV);
    assert.equal(r1.ca?.value, "/env/ca.crt");
    assert.equal(r1.cert?.source, "context");

    const flags: ConnectionFlags = { endpoint: "flag-host:2", tenant: T_FLAG, insecure: true };
    const r2 = resolveConnection({ flags, env: withEnv, home, readText });
    assert.deepEqual(r2.endpoint, { value: "flag-host:2", source: "flag", origin: "--endpoint" });
    assert.equal(r2.tenant?.value, T_FLAG);
    assert.equal(r2.ca?.source, "env");
    assert.deepEqual(r2.insecure, { value: true, source: "flag", origin: "--insecure" });
  });

  it("--context beats QIMCTL_CONTEXT, which beats the default path", () => {
    const a = writeContext(path.join(dir, "a.json"), { endpoint: "a:1" });
    const b = writeContext(path.join(dir, "b.json"), { endpoint: "b:1" });
    assert.equal(resolveConnection({ flags: {}, env: { ...env, QIMCTL_CONTEXT: a }, home, readText }).endpoint?.value, "a:1");
    assert.equal(resolveConnection({ flags: { context: b }, env: { ...env, QIMCTL_CONTEXT: a }, home, readText }).endpoint?.value, "b:1");
  });

  it("a context file named explicitly must exist; the default one may be absent", () => {
    assert.throws(() => resolveConnection({ flags: { context: path.join(dir, "missing.json") }, env: {}, home, readText }), (e: unknown) => e instanceof UsageError && e.field === "--context");
    assert.throws(() => resolveConnection({ flags: {}, env: { QIMCTL_CONTEXT: path.join(dir, "missing.json") }, home, readText }), /QIMCTL_CONTEXT/);
    const none = resolveConnection({ flags: {}, env: {}, home: path.join(dir, "nobody"), readText });
    assert.equal(none.endpoint, undefined);
    assert.equal(none.contextPath, undefined);
    assert.deepEqual(none.insecure, { value: false, source: "default", origin: "default" });
  });

  it("empty values do not override: an empty QIMCTL_ENDPOINT falls through to the context file", () => {
    assert.equal(resolveConnection({ flags: { endpoint: "" }, env: { ...env, QIMCTL_ENDPOINT: "" }, home, readText }).endpoint?.value, "ctx-host:7443");
  });

  it("refuses a malformed context file with exit-code-2 errors naming --context", () => {
    assert.throws(() => parseContextFile("{", "/x.json"), (e: unknown) => e instanceof UsageError && /not JSON/.test(e.message));
    assert.throws(() => parseContextFile("[]", "/x.json"), /JSON object/);
    assert.throws(() => parseContextFile(JSON.stringify({ endpoint: 7443 }), "/x.json"), /"endpoint" must be a string/);
    assert.throws(() => parseContextFile(JSON.stringify({ insecure: "yes" }), "/x.json"), /"insecure" must be true or false/);
    assert.deepEqual(parseContextFile(JSON.stringify({ endpoint: "h:1", extra: 1, tenant: null }), "/x.json"), { endpoint: "h:1" });
  });
});

describe("named contexts: --context NAME or PATH, the current context, the old single file", () => {
  const home = path.join(dir, "home-named");
  const xdg = path.join(dir, "xdg-named");
  const env = { XDG_CONFIG_HOME: xdg };
  const config = path.join(xdg, "qimctl", "config.json");
  const legacy = path.join(xdg, "qimctl", "context.json");

  it("a value with a / or ending in .json is a file; anything else a name", () => {
    assert.deepEqual(["prod", "dev", "a.b", "./prod", "x/y", "prod.json", "/abs"].map(isContextPath), [false, false, false, true, true, true, true]);
    assert.equal(defaultConfigPath(env, home), config);
  });

  it("without a config file the old context file is read; --context NAME then names no context", () => {
    writeContext(legacy, { endpoint: "legacy:1", ca: "pki/ca.crt" });
    const r = resolveConnection({ flags: {}, env, home, readText });
    assert.equal(r.endpoint?.value, "legacy:1");
    assert.equal(r.ca?.value, path.join(xdg, "qimctl", "pki", "ca.crt"));
    assert.equal(r.contextName, undefined);
    assert.throws(() => resolveConnection({ flags: { context: "prod" }, env, home, readText }),
      (e: unknown) => e instanceof UsageError && e.field === "--context" && /no context named "prod" in .*config\.json; there are no contexts yet/.test(e.message));
  });

  it("the first change creates the config file, importing the old file as the current context default (paths made absolute); the old file is then not read", () => {
    const change = updateConfig(env, home, (cfg) => {
      cfg.contexts.prod = { endpoint: "prod:7443", tenant: T_CTX, ca: "/etc/qim/ca.crt" };
    });
    assert.deepEqual(change.imported, { name: "default", from: legacy });
    assert.equal(change.written, true);
    assert.deepEqual(JSON.parse(readFileSync(config, "utf8")), {
      current: "default",
      contexts: {
        default: { endpoint: "legacy:1", ca: path.join(xdg, "qimctl", "pki", "ca.crt") },
        prod: { endpoint: "prod:7443", tenant: T_CTX, ca: "/etc/qim/ca.crt" },
      },
    });
    assert.equal(statSync(config).mode & 0o777, 0o600, "config.json is 0600");
    assert.deepEqual(readdirSync(path.dirname(config)).sort(), ["config.json", "context.json"], "no temporary or lock file left");
    assert.equal(JSON.parse(readFileSync(legacy, "utf8")).endpoint, "legacy:1", "the old file is left unchanged");

    writeContext(legacy, { endpoint: "changed-later:1" });
    assert.equal(resolveConnection({ flags: {}, env, home, readText }).endpoint?.value, "legacy:1", "the current context, not the old file");
  });

  it("--context NAME and QIMCTL_CONTEXT=NAME select a named context; flags and env still win per setting", () => {
    const r = resolveConnection({ flags: { context: "prod" }, env, home, readText });
    assert.deepEqual(r.endpoint, { value: "prod:7443", source: "context", origin: `context "prod" of ${config}` });
    assert.equal(r.contextName, "prod");
    assert.equal(r.contextPath, config);
    assert.equal(resolveConnection({ flags: {}, env: { ...env, QIMCTL_CONTEXT: "prod" }, home, readText }).tenant?.value, T_CTX);
    assert.equal(resolveConnection({ flags: { context: "prod", endpoint: "flag:2" }, env, home, readText }).endpoint?.value, "flag:2");
    assert.equal(resolveConnection({ flags: {}, env: { ...env, QIMCTL_CONTEXT: "prod", QIMCTL_TENANT: T_ENV }, home, readText }).tenant?.value, T_ENV);
    // a path still selects a file, named contexts or not
    const file = writeContext(path.join(dir, "one.json"), { endpoint: "file:3" });
    assert.equal(resolveConnection({ flags: { context: file }, env, home, readText }).endpoint?.value, "file:3");
  });

  it("an unknown name lists the known ones; a name that is a file here says how to use the file", () => {
    assert.throws(() => resolveConnection({ flags: { context: "staging" }, env, home, readText }),
      (e: unknown) => e instanceof UsageError && e.field === "--context" && /no context named "staging" in .*; known: default, prod \(from --context\)/.test(e.message));
    assert.throws(() => resolveConnection({ flags: {}, env: { ...env, QIMCTL_CONTEXT: "staging" }, home, readText }), /\(from QIMCTL_CONTEXT\)/);
    assert.throws(() => resolveConnection({ flags: { context: "bad name!" }, env, home, readText }), /is not a context name/);
    const cwd = process.cwd();
    const here = mkdtempSync(path.join(dir, "cwd-"));
    writeFileSync(path.join(here, "stage"), "{}");
    process.chdir(here);
    try {
      assert.throws(() => resolveConnection({ flags: { context: "stage" }, env, home, readText }), /a file stage exists here: give \.\/stage/);
    } finally {
      process.chdir(cwd);
    }
  });

  it("no current context: nothing is selected (the old file is not read either)", () => {
    updateConfig(env, home, (cfg) => {
      cfg.current = null;
    });
    assert.deepEqual(selectContext({ env, home, readText }), { kind: "none", config });
    assert.equal(resolveConnection({ flags: {}, env, home, readText }).endpoint, undefined);
  });

  it("a change that changes nothing writes nothing; the config file is checked as it is read", () => {
    const before = statSync(config).mtimeMs;
    const change = updateConfig(env, home, () => undefined);
    assert.equal(change.written, false);
    assert.equal(statSync(config).mtimeMs, before);
    assert.throws(() => parseConfigFile(JSON.stringify({ current: "x", contexts: {} }), "/c.json"), /the current context "x" is not one of its contexts/);
    assert.throws(() => parseConfigFile(JSON.stringify({ contexts: { "a/b": {} } }), "/c.json"), /is not a context name/);
    assert.throws(() => parseConfigFile(JSON.stringify({ contexts: { a: { endpoint: 1 } } }), "/c.json"), /context "a": "endpoint" must be a string/);
    assert.deepEqual(parseConfigFile("{}", "/c.json"), { current: null, contexts: {} });
  });

  it("a lock left by a process that is gone is taken over", () => {
    writeFileSync(`${config}.lock`, "999999999");
    updateConfig(env, home, (cfg) => {
      cfg.current = "prod";
    });
    assert.ok(!existsSync(`${config}.lock`));
    assert.equal(JSON.parse(readFileSync(config, "utf8")).current, "prod");
  });

  it("an old context file that dev up wrote is imported as dev, marks and all, so that dev up knows it again", () => {
    const xdg2 = path.join(dir, "xdg-dev-legacy");
    const env2 = { XDG_CONFIG_HOME: xdg2 };
    writeContext(path.join(xdg2, "qimctl", "context.json"), { endpoint: "localhost:4", ca: "/d/pki/ca.crt", dev: true, dataDir: "/d" });
    const change = updateConfig(env2, home, () => undefined);
    assert.equal(change.imported?.name, "dev");
    assert.deepEqual(JSON.parse(readFileSync(path.join(xdg2, "qimctl", "config.json"), "utf8")), {
      current: "dev",
      contexts: { dev: { endpoint: "localhost:4", ca: "/d/pki/ca.crt", dev: true, dataDir: "/d" } },
    });
  });
});
