/**
 * LocalPresence (core/presence): one node's watches and each connection's merge window, in
 * memory (no store: what a node does with states already read). Expected frames are worked out by
 * hand from the states fed in.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { LocalPresence, type PresenceConnection, type PresenceState, type Uuid } from "../../../core/index.js";

const T = "00000000-0000-4000-8000-000000000001" as Uuid;
const [G1, G2] = ["10000000-0000-4000-8000-000000000000", "20000000-0000-4000-8000-000000000000"] as Uuid[];
const [U1, U2, U3] = ["a0000000-0000-4000-8000-000000000001", "a0000000-0000-4000-8000-000000000002", "a0000000-0000-4000-8000-000000000003"] as Uuid[];
const WINDOW = 200;

class Conn implements PresenceConnection {
  readonly tenant = T;
  frames: { at: number; states: PresenceState[] }[] = [];
  take = true;
  pushPresence(states: readonly PresenceState[]): boolean {
    if (!this.take) return false;
    this.frames.push({ at: Date.now(), states: [...states] });
    return true;
  }
}

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("LocalPresence", () => {
  it("a change goes at once after a quiet window; changes inside a window go together at its end, a flap back not at all", async () => {
    const p = new LocalPresence(WINDOW, 10);
    const c = new Conn();
    assert.deepEqual(p.add(c, G1, [{ user: U1, online: false }, { user: U2, online: false }, { user: U3, online: true }]), [U1, U2, U3]);
    assert.equal(p.read(T, U1, true), true);
    assert.equal(p.read(T, U1, true), false, "the same state again is no change");
    await tick(20);
    assert.deepEqual(c.frames.map((f) => f.states), [[{ user: U1, online: true }]]);
    // inside the window: U2 comes, U3 goes and comes back, U1 goes
    p.read(T, U2, true);
    p.read(T, U3, false);
    p.read(T, U3, true);
    p.read(T, U1, false);
    await tick(WINDOW / 2);
    assert.equal(c.frames.length, 1, "held until the window ends");
    await tick(WINDOW);
    assert.equal(c.frames.length, 2);
    assert.deepEqual(c.frames[1]!.states, [{ user: U2, online: true }, { user: U1, online: false }], "U3 is back at what it was told: not in it");
    assert.ok(c.frames[1]!.at - c.frames[0]!.at >= WINDOW - 5);
  });

  it("counts (group, user) pairs against the cap; a user watched through two groups stays watched until both end; close ends all", () => {
    const p = new LocalPresence(WINDOW, 3);
    const c = new Conn();
    const d = new Conn();
    p.add(c, G1, [{ user: U1, online: false }, { user: U2, online: false }]);
    assert.deepEqual(p.add(c, G2, [{ user: U1, online: false }]), [], "U1 already watched here");
    assert.equal(p.wouldHold(c, G2, [U1, U2]), 4);
    assert.throws(() => p.checkRoom(c, G2, [U2]), { code: "FAILED_PRECONDITION" });
    p.add(d, G1, [{ user: U3, online: false }]);
    assert.deepEqual(p.size, { subscriptions: 4, connections: 2, users: 3 });
    assert.deepEqual(p.remove(c, G1, [U1]), { removed: 1, gone: [] }, "U1 still watched through G2");
    assert.deepEqual(p.remove(c, G1, null), { removed: 1, gone: [U2] });
    assert.deepEqual(p.remove(c, G1, null), { removed: 0, gone: [] });
    assert.equal(p.watched(T, U1), true);
    assert.deepEqual(p.closed(c), [U1]);
    assert.equal(p.watched(T, U1), false);
    assert.deepEqual(p.size, { subscriptions: 1, connections: 1, users: 1 });
    assert.deepEqual([...p.watchedUsers()], [[T, [U3]]]);
    assert.deepEqual(p.closed(d), [U3]);
    assert.deepEqual(p.size, { subscriptions: 0, connections: 0, users: 0 });
  });

  it("a second watcher subscribing with an older state than the node knows is sent the newer one", async () => {
    const p = new LocalPresence(WINDOW, 10);
    const c = new Conn();
    const d = new Conn();
    p.add(c, G1, [{ user: U1, online: false }]);
    p.read(T, U1, true);
    p.add(d, G1, [{ user: U1, online: false }]);
    await tick(20);
    assert.deepEqual(d.frames.map((f) => f.states), [[{ user: U1, online: true }]]);
  });
});
