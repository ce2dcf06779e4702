/**
 * bench/cmd-ack-trim — retention's acknowledged trim of CMD history (issue 26), on one private
 * redis-server through the real engine (EngineRuntime: CMD log, pending buffer, Redis CMD state,
 * retention), the tenant without any retention rule:
 *   1. CHANNELS channels of MESSAGES messages each to the same RECIPIENTS users; every user syncs
 *      and acknowledges everything (CMD sync + ack, as /message/syncack does); then one retention
 *      round. Printed: the CMD history's MEMORY USAGE before and after, the entries removed, the
 *      round's time, and the HGETs it made beyond the baseline round's (INFO commandstats: the
 *      state reads, and where it trims the script's cursor read).
 *   2. The same channels again, this time with one more recipient per message who never syncs:
 *      the round finds nothing to remove; its time and reads are what a channel that waits costs.
 *   Baseline for the round's time: the same round with the acknowledged trim off (no reader), in
 *   the same run — the directory walk and the rules' script call alone; the ratios say what the
 *   acknowledgement check adds.
 * Usage: node dist/bench/cmd-ack-trim.js [--channels C] [--messages M] [--recipients R] [--json]
 */
import { Redis } from "ioredis";
import { cmdChannelKeys, EngineRuntime, KeySpace, newUuid, RedisHashAuthority, RedisStore, type Uuid } from "../core/index.js";
import { startRedis } from "../test/harness/redis.js";
import { flag } from "./args.js";

const args = process.argv.slice(2);
const JSON_OUT = args.includes("--json");
const CHANNELS = flag("--channels", 100);
const MESSAGES = flag("--messages", 20);
const RECIPIENTS = flag("--recipients", 10);

interface Phase { entriesBefore: number; bytesBefore: number; bytesAfter: number; removed: number; roundMs: number; stateReads: number; roundMsWithoutAcks: number }

async function hgetCalls(raw: Redis): Promise<number> {
  const m = /^cmdstat_hget:calls=(\d+)/m.exec(await raw.info("commandstats"));
  return m ? Number(m[1]) : 0;
}

async function main(): Promise<void> {
  const server = await startRedis();
  const raw = new Redis({ host: server.host, port: server.port });
  const store = new RedisStore({ kind: "instances", addrs: [server.addr] });
  const keyPrefix = "bench";
  const keys = new KeySpace(keyPrefix);
  const make = (acks: boolean) => new EngineRuntime({
    store, keyPrefix,
    authority: new RedisHashAuthority(store, keys),
    projection: { background: false },
    conversationList: { compactor: { background: false } },
    unreadAudit: { intervalMs: 0 },
    relayIntervalMs: 0,
    retention: { intervalMs: 0, ...(acks ? {} : { cmdReadSeqs: undefined }) },
  });
  const rt = make(true);
  await rt.start();
  // the same key space without the reader: the baseline round (rules only, no rule set: the walk)
  const plain = make(false);
  try {
    const tenant = newUuid();
    const users: Uuid[] = Array.from({ length: RECIPIENTS }, () => newUuid());
    const usage = async (channels: string[]) => {
      let bytes = 0;
      let entries = 0;
      for (const c of channels) {
        const k = cmdChannelKeys(keys, tenant, { channelId: `${c}____cmd`, channelType: 1 });
        bytes += Number(await raw.call("MEMORY", "USAGE", k.hist, "SAMPLES", "0") ?? 0);
        entries += await raw.zcard(k.hist);
      }
      return { bytes, entries };
    };
    const phase = async (label: string, extra: Uuid | null): Promise<Phase> => {
      const channels = Array.from({ length: CHANNELS }, (_, i) => `${label}${i}`);
      for (const c of channels) {
        for (let m = 0; m < MESSAGES; m++) {
          await rt.cmd.send({ tenant, channelId: c, channelType: 1, from: null, to: extra ? [...users, extra] : users, noPersist: false, payload: Buffer.alloc(128) });
        }
      }
      // every user (not `extra`) syncs and acknowledges everything
      for (const u of users) {
        for (;;) {
          const got = await rt.cmd.syncLocal(tenant, u, 1000);
          if (got.messages.length === 0) break;
          await rt.cmd.ackLocal(tenant, u, 0);
        }
      }
      const before = await usage(channels);
      // baseline first (it removes nothing: no rule, no reader; once untimed, which fills the bucket
      // directories), then the round with acknowledgements
      await plain.retention.runRound({ tenant });
      const plainReads0 = await hgetCalls(raw);
      let t0 = performance.now();
      await plain.retention.runRound({ tenant });
      const roundMsWithoutAcks = performance.now() - t0;
      const plainReads = await hgetCalls(raw) - plainReads0;
      const reads0 = await hgetCalls(raw);
      t0 = performance.now();
      const r = await rt.retention.runRound({ tenant });
      const roundMs = performance.now() - t0;
      // the HGETs the check added: the state reads (and, where it trims, the script's cursor read)
      const stateReads = await hgetCalls(raw) - reads0 - plainReads;
      const after = await usage(channels);
      return { entriesBefore: before.entries, bytesBefore: before.bytes, bytesAfter: after.bytes, removed: r.cmd.histRemoved, roundMs, stateReads, roundMsWithoutAcks };
    };
    const acked = await phase("a", null);
    const waiting = await phase("w", newUuid());
    const out = { channels: CHANNELS, messages: MESSAGES, recipients: RECIPIENTS, acked, waiting };
    if (JSON_OUT) {
      console.log(JSON.stringify(out));
      return;
    }
    const line = (name: string, p: Phase) => console.log(
      `${name.padEnd(34)} ${p.entriesBefore} entries, history ${(p.bytesBefore / 1024).toFixed(0)} KiB → ${(p.bytesAfter / 1024).toFixed(0)} KiB, ${p.removed} removed; ` +
      `round ${p.roundMs.toFixed(0)} ms (${p.stateReads} HGETs more) against ${p.roundMsWithoutAcks.toFixed(0)} ms without the check: ${(p.roundMs / p.roundMsWithoutAcks).toFixed(2)}×`);
    console.log(`${CHANNELS} CMD channels × ${MESSAGES} messages to ${RECIPIENTS} recipients, no retention rule`);
    line("all acknowledged", acked);
    line("one recipient never syncs", waiting);
  } finally {
    await rt.stop();
    await store.close();
    raw.disconnect();
    await server.stop();
  }
}

await main();
