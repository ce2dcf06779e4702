#!/usr/bin/env node
/**
 * bench/wukongim/run.mjs — the WuKongIM side of bench/gateway part a (issue 27's side-by-side run).
 * Builds WuKongIM and bench/wukongim/load (qimbench) from a WuKongIM source tree, starts one
 * WuKongIM node on loopback ports with a fresh data directory, runs qimbench --rounds times, stops
 * the node by pid, and prints one JSON line per round and their median.
 *
 * Usage: node bench/wukongim/run.mjs --src DIR [--sends N] [--rounds R] [--inflight K] [--keep-data]
 *   --src    a WuKongIM checkout (tag v2.2.5-20260422 was measured); `go` on PATH (its modules
 *            come from the machine's module proxy)
 * Our side, right after (the same machine, one at a time): node dist/bench/gateway.js --sends 4000 --rounds 3 --idle 200 --fanout-messages 1
 * (part a). bench/wukongim/README.md says what to compare and what differs.
 */
import { spawn, execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync, existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : dflt;
};
const src = arg("--src");
if (!src || !existsSync(path.join(src, "go.mod"))) {
  process.stderr.write("usage: node bench/wukongim/run.mjs --src WUKONGIM_SOURCE_DIR [--sends N] [--rounds R] [--inflight K]\n");
  process.exit(2);
}
const sends = Number(arg("--sends", "4000"));
const rounds = Number(arg("--rounds", "3"));
const inflight = Number(arg("--inflight", "64"));
const work = mkdtempSync(path.join(os.tmpdir(), "qim-wukongim-"));
const bin = path.join(work, "bin");
mkdirSync(bin);

// its main package embeds web/dist and demo (the web UI, built with yarn): empty pages are enough here
for (const d of ["web/dist", "demo"]) {
  mkdirSync(path.join(src, d), { recursive: true });
  if (!existsSync(path.join(src, d, "index.html"))) writeFileSync(path.join(src, d, "index.html"), "<html></html>\n");
}
mkdirSync(path.join(src, "cmd/qimbench"), { recursive: true });
copyFileSync(path.join(here, "load/main.go"), path.join(src, "cmd/qimbench/main.go"));
const goEnv = { ...process.env, GOFLAGS: "-mod=mod" };
process.stderr.write("building WuKongIM and qimbench…\n");
execFileSync("go", ["build", "-o", path.join(bin, "wukongim"), "."], { cwd: src, env: goEnv, stdio: ["ignore", "inherit", "inherit"] });
execFileSync("go", ["build", "-o", path.join(bin, "qimbench"), "./cmd/qimbench"], { cwd: src, env: goEnv, stdio: ["ignore", "inherit", "inherit"] });

// every listener on loopback; info-level logs (debug mode logs every request); debug mode keeps
// token auth off (the sender connects with any token), as the measurement did
const config = path.join(work, "wukongim.yaml");
writeFileSync(config, `mode: "debug"
addr: "tcp://127.0.0.1:15100"
httpAddr: "127.0.0.1:15001"
wsAddr: "ws://127.0.0.1:15200"
rootDir: "${path.join(work, "data")}"
pprofOn: false
external:
  ip: "127.0.0.1"
  tcpAddr: "127.0.0.1:15100"
  wsAddr: "ws://127.0.0.1:15200"
intranet:
  tcpAddr: "127.0.0.1:15100"
logger:
  level: 2
manager:
  on: false
demo:
  on: false
conversation:
  on: true
cluster:
  nodeId: 1
  addr: "tcp://127.0.0.1:20001"
  serverAddr: "127.0.0.1:20001"
  apiUrl: "http://127.0.0.1:15001"
`);
const node = spawn(path.join(bin, "wukongim"), ["--config", config], { stdio: ["ignore", "ignore", "inherit"] });
const results = [];
try {
  for (let i = 0; ; i++) {
    if (i > 100) throw new Error("WuKongIM did not answer /health within 20 s");
    try {
      const r = await fetch("http://127.0.0.1:15001/health", { signal: AbortSignal.timeout(1000) });
      if (r.ok) break;
    } catch { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 200));
  }
  for (let round = 1; round <= rounds; round++) {
    const out = execFileSync(path.join(bin, "qimbench"), ["--sends", String(sends), "--inflight", String(inflight)], { encoding: "utf8" });
    const r = JSON.parse(out.trim().split("\n").at(-1));
    results.push(r);
    console.log(JSON.stringify({ round, ...r }));
  }
  const med = (k) => results.map((r) => r[k]).sort((a, b) => a - b)[Math.floor(results.length / 2)];
  console.log(JSON.stringify({ median: { sendsPerSec: Math.round(med("sendsPerSec")), ackP50Ms: med("ackP50Ms"), ackP99Ms: med("ackP99Ms") } }));
} finally {
  node.kill("SIGTERM");
  await new Promise((r) => node.once("exit", r));
  if (!process.argv.includes("--keep-data")) rmSync(work, { recursive: true, force: true });
}
