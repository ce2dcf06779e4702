/**
 * core/rtc (issue 28, spec 003 §5) on a real Redis with a real group: busy, the ring timeout, the
 * offline callee's VoIP pushes within the daily quota, and bad signals refused. The devices are a
 * recorder standing in for core/delivery (the gateway test drives the real door); every expected
 * value is worked out by hand from the calls made here.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, it } from "node:test";
import { FailedPreconditionError, InvalidArgumentError, newUuid, PermissionDeniedError, RTC_KIND, RtcSignalling, type RtcDelivery, type RtcPush, type Uuid } from "../../core/index.js";
import { useEngine } from "./fixture.js";

describe("core/rtc", { timeout: 60_000 }, () => {
  const fx = useEngine("single");

  const setUp = async (opts: { online?: Set<Uuid>; quota?: number; ringMs?: number } = {}) => {
    const tenant = fx.tenant();
    const [a, b, c, d] = [newUuid(), newUuid(), newUuid(), newUuid()];
    const group = (await fx.engine.createGroup({ tenant, owner: a, members: [b, c, d] })).group as Uuid;
    const got: { to: Uuid; e: RtcDelivery }[] = [];
    const pushes: RtcPush[] = [];
    const online = opts.online ?? new Set([a, b, c, d]);
    const rtc = new RtcSignalling(fx.store, fx.engine.keys, {
      deliver: async (_t, to, e) => {
        if (!online.has(to)) return { here: 0, nodes: 0 };
        got.push({ to, e });
        return { here: 1, nodes: 0 };
      },
      activeMembers: (t, g, users) => fx.engine.activeMembers(t, g, users),
      devicesOf: async () => ["phone", "tablet"],
      pushSink: { name: "test", push: async (p) => void pushes.push(p) },
      ...(opts.quota !== undefined ? { voipDailyQuota: opts.quota } : {}),
      ...(opts.ringMs !== undefined ? { ringTimeoutMs: opts.ringMs } : {}),
    });
    const sig = (from: Uuid, target: Uuid, kind: number, callId: string, payload = Buffer.alloc(0)) => rtc.signal({ tenant, group, from, fromDevice: "dev", target, callId, kind, payload });
    return { tenant, group, a, b, c, d, got, pushes, rtc, sig };
  };

  it("busy while ringing and while answered; free again after END; the callee gets each signal with its payload", async () => {
    const { a, b, c, got, rtc, sig } = await setUp();
    const [call1, call2] = [randomUUID(), randomUUID()];
    assert.deepEqual(await sig(a, b, RTC_KIND.invite, call1, Buffer.from("sfu: turn://x")), { callId: call1, outcome: "ringing", devices: 1 });
    assert.deepEqual((await sig(c, b, RTC_KIND.invite, call2)).outcome, "busy", "b is ringing");
    await assert.rejects(sig(a, c, RTC_KIND.invite, call2), FailedPreconditionError, "a is calling b");
    assert.equal((await sig(b, a, RTC_KIND.accept, call1)).outcome, "delivered");
    assert.equal((await sig(c, b, RTC_KIND.invite, call2)).outcome, "busy", "b is in the call");
    // c, a third member, learned call1's id: c can neither ring into it nor end it, for either party
    assert.equal((await sig(c, b, RTC_KIND.invite, call1)).outcome, "busy");
    await assert.rejects(sig(c, b, RTC_KIND.end, call1), FailedPreconditionError);
    await assert.rejects(sig(c, a, RTC_KIND.sdp, call1), FailedPreconditionError);
    assert.equal((await sig(a, b, RTC_KIND.sdp, call1, Buffer.from("v=0"))).outcome, "delivered");
    assert.equal((await sig(b, a, RTC_KIND.end, call1)).outcome, "delivered");
    assert.equal((await sig(c, b, RTC_KIND.invite, call2)).outcome, "ringing", "free after END");
    assert.equal((await sig(c, b, RTC_KIND.cancel, call2)).outcome, "delivered");
    assert.deepEqual(got.map((g) => [g.to === b ? "b" : g.to === a ? "a" : "?", g.e.signal, Buffer.from(g.e.payload).toString()]), [
      ["b", RTC_KIND.invite, "sfu: turn://x"], ["a", RTC_KIND.accept, ""], ["b", RTC_KIND.sdp, "v=0"], ["a", RTC_KIND.end, ""], ["b", RTC_KIND.invite, ""], ["b", RTC_KIND.cancel, ""],
    ]);
    rtc.stop();
  });

  it("a ring nobody answers ends after the ring timeout: both sides get TIMEOUT and the callee is free", async () => {
    const { a, b, got, rtc, sig } = await setUp({ ringMs: 300 });
    const call = randomUUID();
    assert.equal((await sig(a, b, RTC_KIND.invite, call)).outcome, "ringing");
    for (let i = 0; i < 100 && got.filter((g) => g.e.signal === RTC_KIND.timeout).length < 2; i++) await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(got.filter((g) => g.e.signal === RTC_KIND.timeout).map((g) => g.to).sort(), [a, b].sort());
    await assert.rejects(sig(b, a, RTC_KIND.accept, call), FailedPreconditionError, "too late to answer");
    assert.equal((await sig(a, b, RTC_KIND.invite, randomUUID())).outcome, "ringing", "free again");
    rtc.stop();
  });

  it("an offline callee's devices are pushed, each within the daily quota; past it the INVITE is unreachable; other signals are never pushed", async () => {
    const online = new Set<Uuid>();
    const { a, b, pushes, rtc, sig } = await setUp({ online, quota: 2 });
    const outcomes: string[] = [];
    for (let i = 0; i < 3; i++) {
      const call = randomUUID();
      outcomes.push((await sig(a, b, RTC_KIND.invite, call)).outcome);
      await sig(a, b, RTC_KIND.cancel, call);
    }
    // quota 2 per device per day: calls 1 and 2 push phone and tablet, call 3 none
    assert.deepEqual(outcomes, ["pushed", "pushed", "unreachable"]);
    assert.deepEqual(pushes.map((p) => [p.user === b, p.device, p.from === a]), [[true, "phone", true], [true, "tablet", true], [true, "phone", true], [true, "tablet", true]]);
    rtc.stop();
  });

  it("bad signals are refused with nothing set; a dissolved group takes no calls", async () => {
    const { a, b, tenant, group, rtc, sig } = await setUp();
    const call = randomUUID();
    await assert.rejects(sig(a, b, RTC_KIND.busy, call), InvalidArgumentError, "BUSY is the node's");
    await assert.rejects(sig(a, b, 99, call), InvalidArgumentError);
    await assert.rejects(sig(a, b, RTC_KIND.invite, "not-a-uuid"), InvalidArgumentError);
    await assert.rejects(sig(a, a, RTC_KIND.invite, call), InvalidArgumentError, "oneself");
    await assert.rejects(sig(a, b, RTC_KIND.invite, call, Buffer.alloc(16 * 1024 + 1)), InvalidArgumentError);
    await assert.rejects(sig(a, newUuid(), RTC_KIND.invite, call), PermissionDeniedError, "a stranger");
    await assert.rejects(sig(a, b, RTC_KIND.sdp, call), FailedPreconditionError, "no such call");
    await assert.rejects(sig(b, a, RTC_KIND.accept, call), FailedPreconditionError, "nothing rings");
    await assert.rejects(sig(a, b, RTC_KIND.end, call), FailedPreconditionError, "no call to end");
    // nothing was set: a's INVITE rings
    assert.equal((await sig(a, b, RTC_KIND.invite, call)).outcome, "ringing");
    await sig(a, b, RTC_KIND.cancel, call);
    // a dissolved group takes no calls (nor typing: the same check)
    await fx.engine.dissolveGroup({ tenant, group });
    await assert.rejects(sig(a, b, RTC_KIND.invite, randomUUID()), PermissionDeniedError, "the group is dissolved");
    rtc.stop();
  });
});
