/**
 * One engine node (an EngineRuntime with cluster options and CMD sync) in a process of its own, for
 * crash.test.ts, which SIGKILLs it under CMD load. Configuration in the environment:
 *   QIM_CMD_CHILD='{ topology, keyPrefix, nodeId, leaseTtlMs, heartbeatMs, dataDir, catchUpMs, flushPointMs }'
 * A tiny control protocol: one JSON request a line on stdin, one JSON answer a line on stdout
 *   {"id":1,"op":"send","req":{tenant, channelId, channelType, from, to, payloadB64, clientMsgNo}} → {"id":1,"ok":true,"seq":3,"duplicate":false}
 *   {"id":2,"op":"status"} → {"id":2,"ok":true,"pending":12,"slots":85,"recovering":0,"rounds":40}
 * A failed request answers {"id":…,"ok":false,"error":"…"}. "ready" is printed once the node has
 * started; SIGTERM stops it gracefully (last flush, pending file) and exits 0.
 */
import { createInterface } from "node:readline";
import { EngineRuntime, KeySpace, RedisHashAuthority, RedisStore, type TopologyConfig, type Uuid } from "../../../core/index.js";

const cfg = JSON.parse(process.env.QIM_CMD_CHILD ?? "") as {
  topology: TopologyConfig; keyPrefix: string; nodeId: string; leaseTtlMs: number; heartbeatMs: number; dataDir: string; catchUpMs: number; flushPointMs: number;
};
const store = new RedisStore(cfg.topology, { onError: (err) => process.stderr.write(`error: redis: ${err.message}\n`) });
const rt = new EngineRuntime({
  store, keyPrefix: cfg.keyPrefix, dispatch: { clusterId: "test", topicId: "dispatch", partitionCount: 2 },
  authority: new RedisHashAuthority(store, new KeySpace(cfg.keyPrefix)), projection: { background: false }, relayIntervalMs: 0,
  conversationList: { compactor: { background: false } },
  cluster: { nodeId: cfg.nodeId, address: "", version: "test", leaseTtlMs: cfg.leaseTtlMs, heartbeatIntervalMs: cfg.heartbeatMs },
  // no flush ticker: the buffer is flushed only at the flush points, so a SIGKILL surely loses unflushed entries
  // every flush point written each interval (also of idle slots), so the test can watch them pass the kill
  cmd: { dataDir: cfg.dataDir, flushIntervalMs: 0, catchUpIntervalMs: cfg.catchUpMs, flushPointIntervalMs: cfg.flushPointMs, flushPointIdleMs: 0 },
  log: (line) => process.stderr.write(`log: ${line}\n`),
});
await rt.start();

interface Request {
  id: number;
  op: "send" | "status";
  req?: { tenant: Uuid; channelId: string; channelType: number; from: Uuid | null; to: Uuid[] | null; payloadB64: string; clientMsgNo: string };
}

const answer = (o: object) => process.stdout.write(`${JSON.stringify(o)}\n`);
createInterface({ input: process.stdin }).on("line", (line) => {
  const r = JSON.parse(line) as Request;
  void (async () => {
    try {
      if (r.op === "send") {
        const q = r.req!;
        const res = await rt.cmd.send({
          tenant: q.tenant, channelId: q.channelId, channelType: q.channelType, from: q.from, to: q.to, noPersist: false,
          payload: new Uint8Array(Buffer.from(q.payloadB64, "base64")), clientMsgNo: q.clientMsgNo,
        });
        answer({ id: r.id, ok: true, seq: res.message.messageSeq, duplicate: res.duplicate, intentAccepted: res.intentAccepted });
      } else {
        const slots = rt.cluster!.ownedUnits("slot").length;
        answer({ id: r.id, ok: true, pending: rt.cmd.pending.size(), slots, recovering: rt.cmd.catchUp.recoveringSlots().length, rounds: rt.cmd.catchUp.rounds });
      }
    } catch (err) {
      answer({ id: r.id, ok: false, error: (err as Error).message });
    }
  })();
});

process.on("SIGTERM", () => {
  void rt.stop().then(() => store.close()).then(() => process.exit(0), (err: unknown) => {
    process.stderr.write(`error: stop: ${(err as Error).message}\n`);
    process.exit(1);
  });
});
process.stdout.write("ready\n");
