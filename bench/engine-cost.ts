/**
 * bench/engine-cost — what one message costs the node beyond its commit (issue 27: the gateway's
 * rate against WuKongIM's is set by the engine, not by the door). One private redis-server
 * (appendfsync always, as the dev stack), one process, one group of --members, --in-flight sends
 * at once, in the same run:
 *   commit only   ConversationService.send: the commit script and its group commit, nothing after it
 *   whole engine  EngineRuntime.conversations.send: the same, with the relay, the dispatch log, the
 *                 session projection, the conversation list, delivery and CMD running as on a node
 * Printed per mode: sends/s, this process's CPU per send (process.cpuUsage) and redis-server's
 * (INFO cpu, read before and after); the ratio whole / commit only says how much of the node a
 * message's fan-in/fan-out work takes, and the Redis column how much of the one Redis core.
 * --redis-breakdown also prints where Redis's time went in the whole-engine mode: every command is
 * logged (SLOWLOG at 0 µs) and summed by command and script, per send (slows Redis a little); the
 * commands scripts ran are listed apart (their time is part of their script's).
 * --only commit|whole runs one mode (to profile it alone: node --cpu-prof dist/bench/engine-cost.js --only whole).
 * Usage: node dist/bench/engine-cost.js [--sends N] [--members M] [--in-flight K] [--rounds R] [--redis-breakdown] [--only MODE] [--json]
 */
import { ConversationService, EngineRuntime, newUuid, RedisStore, type Uuid } from "../core/index.js";
import { startRedis } from "../test/harness/redis.js";
import { flag } from "./args.js";
import { redisCpuSeconds, scriptNamesBySha } from "./redis-stats.js";

const args = process.argv.slice(2);
const JSON_OUT = args.includes("--json");
const SENDS = flag("--sends", 8000);
const MEMBERS = flag("--members", 20);
const IN_FLIGHT = flag("--in-flight", 64);
const ROUNDS = flag("--rounds", 2);
const BREAKDOWN = args.includes("--redis-breakdown");
const ONLY = args.includes("--only") ? args[args.indexOf("--only") + 1] : undefined;
if (ONLY !== undefined && ONLY !== "commit" && ONLY !== "whole") throw new Error("--only is commit or whole");

/** Our scripts by SHA1, so that a SLOWLOG entry names the script instead of its EVALSHA digest. */
const SCRIPTS = scriptNamesBySha();
const commandName = (cmd: string[]) => (cmd[0]?.toLowerCase() === "evalsha" ? SCRIPTS.get(cmd[1]!) ?? "evalsha ?" : cmd[0]!.toLowerCase());
/** Redis time per send by command or script, µs, largest first. */
type Breakdown = [name: string, usPerSend: number, callsPerSend: number][];

interface Result { perSec: number; cpuUsPerSend: number; redisCpuUsPerSend: number; breakdown?: Breakdown }

async function measure(store: RedisStore, send: () => Promise<unknown>, breakdown: boolean): Promise<Result> {
  const run = async (n: number) => {
    let next = 0;
    await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
      while (next < n) {
        next++;
        await send();
      }
    }));
  };
  await run(500);
  const raw = store.dataNodes()[0]!;
  if (breakdown) {
    await raw.config("SET", "slowlog-log-slower-than", "0");
    await raw.config("SET", "slowlog-max-len", "2000000");
    await raw.slowlog("RESET");
  }
  const redis0 = await redisCpuSeconds(store.dataNodes()[0]!) * 1e6;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await run(SENDS);
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const redisUs = await redisCpuSeconds(store.dataNodes()[0]!) * 1e6 - redis0;
  const result: Result = { perSec: SENDS / seconds, cpuUsPerSend: (cpu.user + cpu.system) / SENDS, redisCpuUsPerSend: redisUs / SENDS };
  if (breakdown) {
    await raw.config("SET", "slowlog-log-slower-than", "-1");
    const sums = new Map<string, [number, number]>();
    for (const [, , us, cmd, addr] of (await raw.slowlog("GET", "-1")) as [number, number, number, string[], string][]) {
      // a command a script ran is logged too, from no address: its time is inside the script's
      const name = addr === "?:0" ? `  (in a script) ${cmd[0]!.toLowerCase()}` : commandName(cmd);
      const acc = sums.get(name) ?? [0, 0];
      acc[0] += us;
      acc[1]++;
      sums.set(name, acc);
    }
    result.breakdown = [...sums].sort((a, b) => b[1][0] - a[1][0]).map(([name, [us, n]]) => [name, us / SENDS, n / SENDS]);
  }
  return result;
}

async function mode(whole: boolean): Promise<Result> {
  const redis = await startRedis({ appendonly: true, appendfsync: "always" });
  const store = new RedisStore({ kind: "instances", addrs: [redis.addr] });
  const runtime = whole ? new EngineRuntime({ store, keyPrefix: "cost", dispatch: { clusterId: "qim", topicId: "cost", partitionCount: 8 }, log: () => {} }) : null;
  try {
    await runtime?.start();
    const service = runtime ? runtime.conversations : new ConversationService(store, { keyPrefix: "cost" });
    const tenant = newUuid();
    const users: Uuid[] = Array.from({ length: MEMBERS }, () => newUuid());
    const { group } = await service.createGroup({ tenant, owner: users[0]!, members: users.slice(1) });
    const payload = new Uint8Array(64);
    return await measure(store, () => service.send({ tenant, group, sender: users[0]!, payload, contentType: "application/octet-stream" }), whole && BREAKDOWN);
  } finally {
    await runtime?.stop();
    await store.close();
    await redis.stop();
  }
}

const rounds: { commitOnly?: Result; whole?: Result }[] = [];
const describe = (name: string, m: Result) => `${name} ${m.perSec.toFixed(0)} sends/s, ${m.cpuUsPerSend.toFixed(0)} µs CPU a send, Redis ${m.redisCpuUsPerSend.toFixed(0)} µs CPU a send`;
for (let r = 0; r < ROUNDS; r++) {
  const commitOnly = ONLY === "whole" ? undefined : await mode(false);
  const whole = ONLY === "commit" ? undefined : await mode(true);
  rounds.push({ commitOnly, whole });
  if (!JSON_OUT) {
    const parts = [commitOnly && describe("commit only", commitOnly), whole && describe("whole engine", whole)].filter(Boolean);
    if (commitOnly && whole) parts.push(`rate ${(whole.perSec / commitOnly.perSec).toFixed(3)}×, CPU ${(whole.cpuUsPerSend / commitOnly.cpuUsPerSend).toFixed(1)}×`);
    console.log(`round ${r + 1}: ${parts.join("; ")}`);
    for (const [name, us, calls] of whole?.breakdown ?? []) {
      if (us >= 0.5) console.log(`  Redis ${name.padEnd(40)} ${us.toFixed(1).padStart(6)} µs a send  ${calls.toFixed(2).padStart(6)} calls a send`);
    }
  }
}
if (JSON_OUT) console.log(JSON.stringify({ sends: SENDS, members: MEMBERS, inFlight: IN_FLIGHT, rounds }));
