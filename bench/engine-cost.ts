/**
 * bench/engine-cost — what one message costs the node beyond its commit (issue 27: the gateway's
 * rate against WuKongIM's is set by the engine, not by the door). One private redis-server
 * (appendfsync always, as the dev stack), one process, one group of --members, --in-flight sends
 * at once, in the same run:
 *   commit only   ConversationService.send: the commit script and its group commit, nothing after it
 *   whole engine  EngineRuntime.conversations.send: the same, with the relay, the dispatch log, the
 *                 session projection, the conversation list, delivery and CMD running as on a node
 * Printed per mode: sends/s and this process's CPU per send (process.cpuUsage); the ratio whole /
 * commit only says how much of the node a message's fan-in/fan-out work takes.
 * Usage: node dist/bench/engine-cost.js [--sends N] [--members M] [--in-flight K] [--rounds R] [--json]
 */
import { ConversationService, EngineRuntime, newUuid, RedisStore, type Uuid } from "../core/index.js";
import { startRedis } from "../test/harness/redis.js";
import { flag } from "./args.js";

const args = process.argv.slice(2);
const JSON_OUT = args.includes("--json");
const SENDS = flag("--sends", 8000);
const MEMBERS = flag("--members", 20);
const IN_FLIGHT = flag("--in-flight", 64);
const ROUNDS = flag("--rounds", 2);

interface Result { perSec: number; cpuUsPerSend: number }

async function measure(send: () => Promise<unknown>): Promise<Result> {
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
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await run(SENDS);
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return { perSec: SENDS / seconds, cpuUsPerSend: (cpu.user + cpu.system) / SENDS };
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
    return await measure(() => service.send({ tenant, group, sender: users[0]!, payload, contentType: "application/octet-stream" }));
  } finally {
    await runtime?.stop();
    await store.close();
    await redis.stop();
  }
}

const rounds: { commitOnly: Result; whole: Result }[] = [];
for (let r = 0; r < ROUNDS; r++) {
  const commitOnly = await mode(false);
  const whole = await mode(true);
  rounds.push({ commitOnly, whole });
  if (!JSON_OUT) {
    console.log(`round ${r + 1}: commit only ${commitOnly.perSec.toFixed(0)} sends/s, ${commitOnly.cpuUsPerSend.toFixed(0)} µs CPU a send; ` +
      `whole engine ${whole.perSec.toFixed(0)} sends/s, ${whole.cpuUsPerSend.toFixed(0)} µs CPU a send; rate ${(whole.perSec / commitOnly.perSec).toFixed(3)}×, CPU ${(whole.cpuUsPerSend / commitOnly.cpuUsPerSend).toFixed(1)}×`);
  }
}
if (JSON_OUT) console.log(JSON.stringify({ sends: SENDS, members: MEMBERS, inFlight: IN_FLIGHT, rounds }));
