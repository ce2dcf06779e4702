import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { defaultContextPath, parseContextFile, resolveConnection, type ConnectionFlags } from "../../cli/context.js";
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
