/**
 * Running the real `bin/qimctl.js` as a child process for the end-to-end tests: a clean
 * environment, `--output json` unless told otherwise, the result parsed — and checked against
 * the command's JSON shape in cli/command-snapshot.json (test/cli/contract.ts), so that every
 * JSON output the suites produce holds the locked contract.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startAdminServer, type AdminServer } from "../../server/node.js";
import type { ConversationOptions } from "../../core/index.js";
import { writeTestPki, type TestPkiFiles, type TestPkiName } from "../certs/fixture.js";
import { outputMismatch } from "../cli/contract.js";
import { freePort, startRedis, type RedisServer, type StartRedisOptions } from "../harness/redis.js";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
export const QIMCTL = path.join(ROOT, "bin", "qimctl.js");

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout parsed (exit 0) or the `error` object parsed from stderr (exit ≠ 0), in JSON mode. */
  json: any;
}

/**
 * An empty XDG_CONFIG_HOME of this test process (removed at exit): the developer's
 * ~/.config/qimctl (contexts, the current context) never reaches a command under test.
 */
const isolatedConfigHome = mkdtempSync(path.join(os.tmpdir(), "qimctl-e2e-xdg-"));
process.on("exit", () => rmSync(isolatedConfigHome, { recursive: true, force: true }));

/** A clean environment: no QIMCTL_* or QIM_* of the developer's, no context file of theirs (callers may set their own XDG_CONFIG_HOME). */
export const baseEnv: NodeJS.ProcessEnv = {
  ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("QIMCTL_") && !k.startsWith("QIM_"))),
  XDG_CONFIG_HOME: isolatedConfigHome,
};

/**
 * Rejects when a JSON output does not fit the snapshot's shape of its command (a result printed
 * with a failure, as `dispatch audit` does, is checked too).
 */
/** `maxBuffer` / `timeoutMs`: for outputs over 1 MiB or runs over 30 s (a 5,000-row --all). */
export function run(args: string[], opts: { context?: string; env?: NodeJS.ProcessEnv; json?: boolean; cwd?: string; maxBuffer?: number; timeoutMs?: number } = {}): Promise<Run> {
  const argv = opts.json === false ? args : [...args, "--output", "json"];
  const env = { ...baseEnv, ...opts.env, ...(opts.context ? { QIMCTL_CONTEXT: opts.context } : {}) };
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [QIMCTL, ...argv], { cwd: opts.cwd ?? ROOT, env, timeout: opts.timeoutMs ?? 30_000, ...(opts.maxBuffer ? { maxBuffer: opts.maxBuffer } : {}) }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === "number" ? err.code : -1) : 0;
      let json: unknown;
      if (opts.json !== false) {
        const mismatch = outputMismatch(args, stdout);
        if (mismatch) {
          reject(new assert.AssertionError({ message: mismatch }));
          return;
        }
        try {
          json = code === 0 ? JSON.parse(stdout) : (JSON.parse(stderr) as { error: unknown }).error;
        } catch {
          json = undefined;
        }
      }
      resolve({ code, stdout, stderr, json });
    });
  });
}

export function ok(r: Run, what: string): any {
  assert.equal(r.code, 0, `${what}: exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  assert.ok(r.json !== undefined, `${what}: stdout is not JSON: ${r.stdout}`);
  return r.json;
}

export function failed(r: Run, exitCode: number, what: string): { code: string; exitCode: number; message: string; field?: string } {
  assert.equal(r.code, exitCode, `${what}: expected exit ${exitCode}, got ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  if (r.json !== undefined) {
    assert.equal(r.json.exitCode, exitCode);
    assert.equal(r.stdout, "", `${what}: a failure prints nothing on stdout`);
  }
  return r.json;
}

/** A real admin server over mTLS on its own redis-server, with the test PKI written under `dir`. */
export interface E2eServer {
  redis: RedisServer;
  server: AdminServer;
  pki: TestPkiFiles;
  /** The server certificate names localhost (TOOLCHAIN: TLS to an IP literal warns). */
  endpoint: string;
  /** What the server logged, line by line. */
  log: string[];
  stop(): Promise<void>;
}

/**
 * `redis`: options of its redis-server (e.g. AOF, for a test that restarts it and needs the data back).
 * `syncTenant`: also start the CMD sync HTTP API (`server.sync`, /message/sync) for that tenant.
 */
export async function startE2eServer(dir: string, opts: { redis?: StartRedisOptions; syncTenant?: string; engine?: ConversationOptions; tokenKeys?: string } = {}): Promise<E2eServer> {
  const pki = await writeTestPki(path.join(dir, "pki"));
  const redis = await startRedis(opts.redis);
  const log: string[] = [];
  const server = await startAdminServer({
    topology: { kind: "instances", addrs: [redis.addr] },
    listen: `127.0.0.1:${await freePort()}`,
    metricsListen: null,
    auditPath: path.join(dir, "audit.log"),
    tls: { caPem: readFileSync(pki.ca.certPath), certPem: readFileSync(pki.server.certPath), keyPem: readFileSync(pki.server.keyPath) },
    log: (line) => { log.push(line); },
    ...(opts.syncTenant ? { sync: { listen: "127.0.0.1:0", tenant: opts.syncTenant } } : {}),
    ...(opts.engine ? { engine: opts.engine } : {}),
    ...(opts.tokenKeys ? { tokenKeys: opts.tokenKeys } : {}),
    // no background unread audit: it corrects drift, and tests inject drift for `unread audit` to
    // find (the sampler has its own tests in test/core/conversation-list)
    unreadAuditIntervalMs: 0,
  });
  return {
    redis, server, pki, log,
    endpoint: `localhost:${server.port}`,
    stop: async () => {
      await server.close();
      await redis.stop();
    },
  };
}

/** Writes a CLI context for `who`'s certificate of the server's test PKI and `tenant` into `dir`; returns its path. */
export function writeContext(e2e: Pick<E2eServer, "endpoint" | "pki">, dir: string, tenant: string, who: TestPkiName): string {
  const file = path.join(dir, `context-${who}.json`);
  writeFileSync(file, JSON.stringify({ endpoint: e2e.endpoint, ca: e2e.pki.ca.certPath, tenant, cert: e2e.pki[who].certPath, key: e2e.pki[who].keyPath }));
  return file;
}
