/**
 * The pipeline's cancellation and deadline rules (issue 25), door by door the same: a call whose
 * caller is already gone, or whose deadline already passed when its turn comes, never reaches its
 * handler (a mutation is audited as refused, nothing done); a handler sees one signal that fires on
 * either, with the reason; an admitted mutation that ignores the signal runs to its end and is
 * answered and audited as done. The real-process proof is deadlines.test.ts.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { status } from "@grpc/grpc-js";
import { CallAbandonedError } from "../../core/index.js";
import type { AuditRecord } from "../../server/audit.js";
import { Pipeline, type PipelineCall } from "../../server/pipeline/pipeline.js";

const principal = { name: "oscar", role: "operator" as const, fingerprint: "" };

function harness() {
  const audit: Omit<AuditRecord, "time">[] = [];
  const refused: { code: number; domainCode: string; message: string }[] = [];
  const answered: string[] = [];
  const pipeline = new Pipeline({ audit: async (r) => void audit.push(r), log: () => {} });
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  const call = (c: Partial<PipelineCall>): PipelineCall => ({ rpc: "/t/Call", roles: ["operator"], mutates: true, principal, arguments: () => ({}), ...c });
  const surface = {
    refuse: (m: { code: number; domainCode: string; message: string }) => {
      refused.push(m);
      done();
    },
  };
  return { audit, refused, answered, pipeline, finished, call, surface, done: () => done() };
}

describe("the pipeline's cancellation and deadlines", () => {
  it("a caller already gone: the handler never runs, the mutation is audited CANCELLED", async () => {
    const h = harness();
    const gone = new AbortController();
    gone.abort();
    let ran = false;
    h.pipeline.run(h.call({ signal: gone.signal }), h.surface, async () => {
      ran = true;
      return { answer: () => h.done() };
    });
    await h.finished;
    assert.equal(ran, false);
    assert.equal(h.refused[0]!.code, status.CANCELLED);
    assert.equal(h.refused[0]!.domainCode, "CANCELLED");
    assert.deepEqual(h.audit.map((r) => r.result), ["CANCELLED"]);
  });

  it("a deadline already passed when its turn comes: DEADLINE_EXCEEDED, the handler never runs", async () => {
    const h = harness();
    let ran = false;
    h.pipeline.run(h.call({ deadline: Date.now() - 1 }), h.surface, async () => {
      ran = true;
      return { answer: () => h.done() };
    });
    await h.finished;
    assert.equal(ran, false);
    assert.equal(h.refused[0]!.code, status.DEADLINE_EXCEEDED);
    assert.deepEqual(h.audit.map((r) => r.result), ["DEADLINE_EXCEEDED"]);
  });

  it("a read that honours the signal ends with the reason the caller gave up for", async () => {
    const h = harness();
    const gone = new AbortController();
    let seen: unknown;
    h.pipeline.run(h.call({ mutates: false, signal: gone.signal, deadline: Date.now() + 60_000 }), h.surface, async ({ signal }) => {
      setImmediate(() => gone.abort());
      await new Promise((r) => signal.addEventListener("abort", r, { once: true }));
      seen = signal.reason;
      signal.throwIfAborted();
      return { answer: () => h.done() };
    });
    await h.finished;
    assert.ok(seen instanceof CallAbandonedError);
    assert.equal((seen as CallAbandonedError).reason, "cancelled");
    assert.equal(h.refused[0]!.code, status.CANCELLED);
    assert.deepEqual(h.audit, [], "a read is not audited");
  });

  it("the deadline fires the signal while the handler works, reason deadline", async () => {
    const h = harness();
    h.pipeline.run(h.call({ mutates: false, deadline: Date.now() + 20 }), h.surface, async ({ signal }) => {
      await new Promise((r) => signal.addEventListener("abort", r, { once: true }));
      signal.throwIfAborted();
      return { answer: () => h.done() };
    });
    await h.finished;
    assert.equal(h.refused[0]!.code, status.DEADLINE_EXCEEDED);
  });

  it("an admitted mutation whose caller goes away meanwhile runs to its end: answered and audited OK", async () => {
    const h = harness();
    const gone = new AbortController();
    let abortedDuring = false;
    h.pipeline.run(h.call({ signal: gone.signal }), h.surface, async ({ signal }) => {
      gone.abort();
      abortedDuring = signal.aborted;
      await new Promise((r) => setImmediate(r));
      return { detail: "done", answer: () => { h.answered.push("OK"); h.done(); } };
    });
    await h.finished;
    assert.equal(abortedDuring, true, "the handler could see it");
    assert.deepEqual(h.answered, ["OK"]);
    assert.deepEqual(h.audit.map((r) => [r.result, r.detail]), [["OK", "done"]]);
  });
});
