/**
 * bench/fanout-timeline — where a big group's fanout spends its time (issue 27, bench/gateway part
 * d): one real node, K devices online in a 10,000-member group, M messages sent at once; per seq,
 * when its first, median and last push arrived (ms after the sends), and what Redis spent, by
 * command (INFO commandstats before and after). Two rounds. With QIM_PROFILE_SERVER=DIR the node
 * writes a CPU profile there when it stops (test/reliability/server-process.ts).
 * Usage: node dist/bench/fanout-timeline.js [K=2000] [M=5]
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { LoadDevice, openDevices, startTarget } from "./loadgen/index.js";

const K = Number(process.argv[2] ?? 2000);
const M = Number(process.argv[3] ?? 5);
const t = await startTarget();
const redis = new Redis({ host: t.redis.host, port: t.redis.port });
const stats = async () => {
  const s = await redis.info("commandstats");
  const out = new Map<string, { calls: number; usec: number }>();
  for (const l of s.split("\n")) {
    const m = /^cmdstat_(\S+):calls=(\d+),usec=(\d+)/.exec(l);
    if (m) out.set(m[1]!, { calls: Number(m[2]), usec: Number(m[3]) });
  }
  return out;
};
try {
  const users = Array.from({ length: K + 1 }, () => randomUUID());
  const devices = await openDevices(K + 1, 64, async (i) => LoadDevice.open(t.url, t.ca, await t.sign(users[i]!, `d${i}`), users[i]!, `d${i}`));
  const filler = Array.from({ length: 10_000 - 1 - K }, () => randomUUID());
  for (let round = 0; round < 2; round++) {
    const { group } = await t.admin.createGroup({ tenant: t.tenant, group: "", owner: users[0]!, members: [...users.slice(1), ...filler] });
    await new Promise((r) => setTimeout(r, 2000));
    const s0 = await stats();
    const t0 = Date.now();
    const acks = await Promise.all(Array.from({ length: M }, (_, i) => devices[0]!.request({ $case: "send", send: { clientMsgNo: `f${round}-${i}`, group, payload: Buffer.alloc(64), contentType: "x", mentions: [] } })));
    const tAck = Date.now() - t0;
    const want = K * M;
    const got = () => devices.slice(1).reduce((n, d) => n + d.arrivals.filter((a) => a.group === group).length, 0);
    while (got() < want) await new Promise((r) => setTimeout(r, 20));
    const arr = devices.slice(1).flatMap((d) => d.arrivals.filter((a) => a.group === group)).map((a) => a.arrivedAtMs - t0).sort((a, b) => a - b);
    const s1 = await stats();
    const per = new Map<number, number[]>();
    for (const d of devices.slice(1)) for (const a of d.arrivals.filter((x) => x.group === group)) { const l = per.get(a.seq) ?? []; l.push(a.arrivedAtMs - t0); per.set(a.seq, l); }
    for (const [seq, l] of [...per].sort((a, b) => a[0] - b[0])) { l.sort((a, b) => a - b); console.log(`   seq ${seq}: first ${l[0]} p50 ${l[Math.floor(l.length / 2)]} last ${l.at(-1)} (n ${l.length})`); }
    console.log(`round ${round}: acks ${acks.map((a) => a.body?.$case).join(",")} in ${tAck} ms; arrivals first ${arr[0]} ms, p50 ${arr[Math.floor(arr.length / 2)]}, last ${arr.at(-1)} ms → ${(want / (arr.at(-1)! / 1000)).toFixed(0)}/s`);
    const diff = [...s1].map(([k, v]) => ({ k, calls: v.calls - (s0.get(k)?.calls ?? 0), usec: v.usec - (s0.get(k)?.usec ?? 0) })).filter((x) => x.calls > 0).sort((a, b) => b.usec - a.usec).slice(0, 10);
    for (const d of diff) console.log(`   ${d.k.padEnd(20)} calls ${String(d.calls).padStart(7)}  ${(d.usec / 1000).toFixed(0)} ms`);
  }
  for (const d of devices) d.close();

} finally {
  redis.disconnect();
  await t.stop();
}
