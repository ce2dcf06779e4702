/** `dispatch audit --junit FILE`: one test case per partition, a failure when its verdict is not OK. */
import type { JUnitSuite } from "../junit.js";
import type { DispatchAuditResult, PartitionResult } from "./results.js";

const n = (v: number | null) => (v === null ? "none" : String(v));

function failureOf(p: PartitionResult): { type: string; message: string; text: string } {
  const lost = p.lost ? `; lost [${p.lost.from}, ${p.lost.to})` : "";
  return {
    type: p.verdict,
    message: `partition ${p.partition} ${p.verdict}: checkpoint ${n(p.checkpoint)}, low ${p.low}, high ${p.high}, lag ${n(p.lag)}${lost}`,
    text: `verdict ${p.verdict}\ncheckpoint ${n(p.checkpoint)}\nlow ${p.low}\nhigh ${p.high}\nlag ${n(p.lag)}${p.lost ? `\nlost [${p.lost.from}, ${p.lost.to})` : ""}\n${p.detail}`,
  };
}

/** `time`: how long the audit took, in seconds, as the CLI measured it. */
export function auditJUnit(r: DispatchAuditResult, endpoint: string, startedAt: string, time: number): JUnitSuite {
  return {
    name: "qimctl dispatch audit",
    timestamp: startedAt,
    time,
    properties: [
      ["endpoint", endpoint],
      ["partitions", r.partitions.length],
      ["ok", r.ok],
    ],
    cases: r.partitions.map((p) => ({
      classname: "dispatch-audit",
      name: `partition ${p.partition}`,
      failures: p.verdict === "OK" ? [] : [failureOf(p)],
      systemOut: `verdict ${p.verdict}, checkpoint ${n(p.checkpoint)}, low ${p.low}, high ${p.high}, lag ${n(p.lag)}: ${p.detail}`,
    })),
  };
}
