import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ConversationService, loadScripts, MembershipChangedError, RedisStore, PermissionDeniedError, callScript, LUA_STATUS, registry, uuidToHex, type Uuid } from "../../core/index.js";
import { ACCEPTANCE_TOPOLOGIES } from "../harness/redis.js";
import { checkConversation } from "./checker.js";
import { useEngine } from "./fixture.js";
import { newUuid } from "../../core/index.js";

const SENDERS = 4;
const MESSAGES_PER_SENDER = 500;
const MEMBERSHIP_WORKERS = 3;
const CHANGES_PER_WORKER = 60;

async function counterValue(name: string, labels: Record<string, string>): Promise<number> {
  const m = (await registry.getMetricsAsJSON()).find((x) => x.name === name);
  const v = m?.values.find((x) => Object.entries(labels).every(([k, l]) => x.labels[k] === l));
  return Number(v?.value ?? 0);
}

for (const kind of ACCEPTANCE_TOPOLOGIES) {
  describe(`ADR-0021 acceptance 4 on ${kind}: sends concurrent with membership changes`, () => {
    const fx = useEngine(kind);

    it(`${SENDERS} senders × ${MESSAGES_PER_SENDER} messages and ${MEMBERSHIP_WORKERS * CHANGES_PER_WORKER} membership changes: every audience is the member set at its seq`, async () => {
      const tenant = fx.tenant();
      const owner = newUuid();
      const senders = Array.from({ length: SENDERS }, () => newUuid());
      const pool = Array.from({ length: 24 }, () => newUuid());
      const initial = [owner, ...senders, ...pool.slice(0, 12)];
      const { group } = await fx.engine.createGroup({ tenant, owner, members: initial });
      const retriesBefore = await counterValue("qim_writer_membership_retry_total", { path: "send" });
      // membership changes come from another process in production (the admin server): give them
      // connections of their own so that their scripts interleave with the senders' at Redis
      const adminStore = new RedisStore(fx.topology.config);
      const admin = new ConversationService(adminStore, { keyPrefix: fx.engine.opts.keyPrefix });
      fx.relay.start(2);

      let committedChanges = 0;
      let refusedChanges = 0;
      let sent = 0;
      let sendGaveUp = 0;
      const sendLoop = async (sender: Uuid) => {
        for (let i = 0; i < MESSAGES_PER_SENDER; i++) {
          // a client whose send was refused after the bounded re-freezes sends again with the
          // same client_message_id, as an SDK does
          const clientMessageId = newUuid();
          for (;;) {
            try {
              await fx.engine.send({ tenant, group, sender, clientMessageId, text: `${sender.slice(0, 4)}-${i}` });
              sent++;
              break;
            } catch (e) {
              if (!(e instanceof MembershipChangedError)) throw e;
              sendGaveUp++;
            }
          }
        }
      };
      const shared = pool[pool.length - 1]!;
      const membershipLoop = async (w: number) => {
        // each worker toggles users of its own (every call changes something) and every fifth
        // call races the other workers over one shared user (one wins, the others plan nothing)
        const own = pool.filter((_, j) => j % MEMBERSHIP_WORKERS === w && pool[j] !== shared);
        const active = new Set(own.filter((u) => initial.includes(u)));
        for (let i = 0; i < CHANGES_PER_WORKER; i++) {
          try {
            if (i % 5 === 4) {
              const r = (i / 5) % 2 === 0
                ? await admin.addMembers({ tenant, group, users: [shared] })
                : await admin.removeMembers({ tenant, group, users: [shared] });
              if (r.outcome === "committed") committedChanges++;
              continue;
            }
            const u = own[i % own.length]!;
            const r = active.has(u)
              ? await admin.removeMembers({ tenant, group, users: [u] })
              : await admin.addMembers({ tenant, group, users: [u] });
            if (r.outcome === "committed") committedChanges++;
            if (active.has(u)) active.delete(u); else active.add(u);
          } catch (e) {
            if (!(e instanceof MembershipChangedError)) throw e;
            refusedChanges++;
          }
        }
      };
      await Promise.all([...senders.map(sendLoop), ...Array.from({ length: MEMBERSHIP_WORKERS }, (_, w) => membershipLoop(w))]);
      await adminStore.close();
      await fx.relay.stop();
      await fx.relay.drainAll();

      const records = (await fx.dispatched()).map((e) => e.record).filter((r) => r.conversation === group);
      const report = checkConversation(initial, records);
      assert.deepEqual(report.violations, []);
      assert.ok(report.messages >= 2000, `messages checked: ${report.messages}`);
      assert.equal(report.messages, sent);
      assert.equal(report.events, committedChanges);
      assert.ok(report.events >= 100, `membership events: ${report.events} (refused after retries: ${refusedChanges})`);
      const info = await fx.engine.getGroup(tenant, group);
      assert.equal(info.conversationSeq, report.messages + report.events, "no gaps: every allocated seq is a dispatched record");
      assert.equal(info.version, 1 + report.events);
      const retries = (await counterValue("qim_writer_membership_retry_total", { path: "send" })) - retriesBefore;
      assert.ok(retries > 0, "the stale-version path of the send was exercised");
      console.log(`# ${kind}: ${report.messages} messages, ${report.events} membership events, ${retries} send re-freezes, ${sendGaveUp} sends refused after 3 re-freezes and resent, ${refusedChanges} changes refused after 3 re-plans`);
      // once everything is dispatched, no version delta is retained
      const k = fx.engine.conversationKeys(tenant, group);
      assert.equal(await fx.store.clientFor(k.tag).exists(k.grpdeltas), 0);
      assert.equal(await fx.store.clientFor(k.tag).hlen(k.commits), 0);
    });

    it("a stale member version is refused inside the script and consumes no sequence number", async () => {
      const tenant = fx.tenant();
      const owner = newUuid();
      const { group } = await fx.engine.createGroup({ tenant, owner });
      await fx.engine.send({ tenant, group, sender: owner, text: "one" });
      await fx.engine.addMembers({ tenant, group, users: [newUuid()] });
      const k = fx.engine.conversationKeys(tenant, group);
      const client = fx.store.clientFor(k.tag);
      const before = await client.get(k.cseq);
      const reply = await callScript(client, "commitMessages",
        [k.idem, k.grpmeta, k.grpmembers, k.cseq, k.hist, k.outbox, k.vpending, k.unreadidx],
        [1, k.outboxRef, uuidToHex(newUuid()), uuidToHex(owner), `${uuidToHex(newUuid())}|${uuidToHex(owner)}|N|1|1|text/plain|eA==`]);
      assert.equal(reply[1], LUA_STATUS.MEMBERSHIP_CHANGED);
      assert.equal(reply[2], 2, "the refusal carries the current version");
      assert.equal(await client.get(k.cseq), before);
    });

    it("the writer gives up after 3 re-freezes with a typed error and commits nothing", async () => {
      const tenant = fx.tenant();
      const owner = newUuid();
      const { group } = await fx.engine.createGroup({ tenant, owner });
      const k = fx.engine.conversationKeys(tenant, group);
      const client = fx.store.clientFor(k.tag);
      // a group whose member version moves before every attempt: another writer bumps it each
      // time this writer's commit script is about to run
      const command = loadScripts().get("commitMessages")!.command;
      const target = client as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
      const original = target[command]!;
      target[command] = async (...a: unknown[]) => {
        await client.hincrby(k.grpmeta, "version", 1);
        return original.apply(client, a);
      };
      const retriesBefore = await counterValue("qim_writer_membership_retry_total", { path: "send" });
      try {
        const err = await fx.engine.send({ tenant, group, sender: owner, text: "never" }).catch((e: unknown) => e);
        assert.ok(err instanceof MembershipChangedError);
        assert.equal(err.details.attempts, 4);
      } finally {
        target[command] = original;
      }
      assert.equal(await client.get(k.cseq), null, "no sequence number consumed");
      assert.equal((await counterValue("qim_writer_membership_retry_total", { path: "send" })) - retriesBefore, 3);
      await assert.rejects(fx.engine.send({ tenant, group, sender: newUuid(), text: "x" }), PermissionDeniedError);
    });
  });
}
