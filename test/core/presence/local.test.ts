/**
 * LocalPresence (core/presence): one node's watches and each connection's merge window, in
 * memory (no store: what a node does with states already read), and its check of each frame's
 * memberships through a hook that answers as the test says. Expected frames are worked out by hand
 * from the states fed in.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { LocalPresence, type PresenceConnection, type PresenceState, type Uuid } from "../../../core/index.js";

const T = "00000000-0000-4000-8000-000000000001" as Uuid;
const [G1, G2] = ["10000000-0000-4000-8000-000000000000", "20000000-0000-4000-8000-000000000000"] as Uuid[];
const [U1, U2, U3] = ["a0000000-0000-4000-8000-000000000001", "a0000000-0000-4000-8000-000000000002", "a0000000-0000-4000-8000-000000000003"] as Uuid[];
const WINDOW = 200;

const W = "b0000000-0000-4000-8000-000000000001" as Uuid;

class Conn implements PresenceConnection {
  readonly tenant = T;
  constructor(readonly user: Uuid = W) {}
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

  it("a frame's pairs are checked first: a group the subscriber left tells it nothing more; a user still watched through another group is", async () => {
    const asked: [Uuid, Uuid[]][] = [];
    const unwatched: Uuid[] = [];
    // the subscriber left G1; in G2 it and U1 are still members
    const p = new LocalPresence(WINDOW, 10, {
      vet: async (conn, byGroup) => {
        assert.equal(conn.user, W);
        for (const [g, users] of byGroup) asked.push([g, [...users]]);
        return new Map([[G1, new Set<Uuid>()], [G2, new Set([U1])]]);
      },
      unwatched: (tenant, users) => { assert.equal(tenant, T); unwatched.push(...users); },
    });
    const c = new Conn();
    p.add(c, G1, [{ user: U1, online: false }, { user: U2, online: false }]);
    p.add(c, G2, [{ user: U1, online: false }]);
    p.read(T, U1, true);
    p.read(T, U2, true);
    await tick(20);
    assert.deepEqual(asked.sort(([a], [b]) => a.localeCompare(b)), [[G1, [U1, U2]], [G2, [U1]]]);
    assert.deepEqual(c.frames.map((f) => f.states), [[{ user: U1, online: true }]], "U2 only through G1: not told");
    assert.deepEqual(unwatched, [U2]);
    assert.deepEqual(p.size, { subscriptions: 1, connections: 1, users: 1 });
    assert.equal(p.watched(T, U2), false);
  });

  it("a frame whose check fails tells nothing and is tried again after a window; a change meanwhile goes in that frame, never two within a window", async () => {
    let fail = true;
    let checks = 0;
    const p = new LocalPresence(WINDOW, 10, {
      vet: async (_conn, byGroup) => {
        checks++;
        await tick(30);
        if (fail) throw new Error("redis unreachable");
        return new Map([...byGroup].map(([g, users]) => [g, new Set(users)]));
      },
    });
    const c = new Conn();
    p.add(c, G1, [{ user: U1, online: false }, { user: U2, online: false }]);
    p.read(T, U1, true);
    await tick(10);
    // while the first check runs
    p.read(T, U2, true);
    await tick(40);
    assert.equal(checks, 1);
    assert.equal(c.frames.length, 0, "nothing told while the memberships could not be read");
    fail = false;
    await tick(WINDOW + 80);
    assert.equal(checks, 2);
    assert.deepEqual(c.frames.map((f) => [...f.states].sort((a, b) => a.user.localeCompare(b.user))), [[{ user: U1, online: true }, { user: U2, online: true }]]);
  });

  it("a frame the connection does not take (past its push budget) is offered again a window later, with the states then", async () => {
    const p = new LocalPresence(WINDOW, 10);
    const c = new Conn();
    p.add(c, G1, [{ user: U1, online: false }, { user: U2, online: false }]);
    c.take = false;
    p.read(T, U1, true);
    p.read(T, U2, true);
    await tick(20);
    assert.equal(c.frames.length, 0);
    // meanwhile U2 went again: back at what the connection was told
    p.read(T, U2, false);
    c.take = true;
    await tick(WINDOW + 60);
    assert.deepEqual(c.frames.map((f) => f.states), [[{ user: U1, online: true }]]);
  });
});
