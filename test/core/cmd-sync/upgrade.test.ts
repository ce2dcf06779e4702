/**
 * The upgrade of the CMD state's last seq (upgrade-scenarios.ts) on a real redis-server and a
 * Redis Cluster: rows of the old code in cmdstate and cmdactive, none in cmdunread.
 */
import { CmdSync, cmdStateKeys, cmdUserRef, KeySpace, newUuid, RedisCmdStateStore, slotOfUser, type Uuid } from "../../../core/index.js";
import { SOLO, useCmdRedis } from "./fixture.js";
import { cmdUpgradeScenarios, type LegacyRow } from "./upgrade-scenarios.js";

/** The cmdactive member as the old code's Lua built it: 2^53-1-activeAt in 14 hex, type in 3 digits. */
const oldMember = (ref: string, r: LegacyRow) => `${ref}|${(Number.MAX_SAFE_INTEGER - r.activeAt).toString(16).padStart(14, "0")}|002|${r.channelId}`;

for (const kind of ["single", "cluster"] as const) {
  const fx = useCmdRedis(kind);
  cmdUpgradeScenarios(`CMD sync after the upgrade, Redis (${kind})`, async () => {
    const keys = new KeySpace(`upg${newUuid().slice(0, 8)}`);
    const cmd = new CmdSync({ store: fx.store, keys, cluster: null, log: () => {} }, { catchUpIntervalMs: 0, flushIntervalMs: 0 });
    await cmd.start();
    const slotKeys = (tenant: Uuid, user: Uuid) => cmdStateKeys(keys, slotOfUser(tenant, user));
    return {
      cmd,
      async writeLegacy(tenant, user, rows) {
        const k = slotKeys(tenant, user);
        const ref = cmdUserRef(tenant, user);
        const p = fx.store.clientForKey(k.state).pipeline();
        for (const r of rows) {
          p.hset(k.state, `${ref}|2|${r.channelId}`, `${r.readSeq}|0|${r.activeAt}|1`);
          p.zadd(k.index, 0, oldMember(ref, r));
        }
        await p.exec();
      },
      async unreadLeft(tenant, user) {
        const k = slotKeys(tenant, user);
        const ref = cmdUserRef(tenant, user);
        return fx.store.clientForKey(k.unread).zlexcount(k.unread, `[${ref}|`, `[${ref}|\xff`);
      },
      async indexInChunks(tenant, user) {
        const chunks: { looked: number; indexed: number }[] = [];
        await (cmd.states as RedisCmdStateStore).indexLegacyRows(tenant, user, SOLO, (c) => chunks.push(c));
        return chunks;
      },
      close: () => cmd.stop(),
    };
  }, 3000);
}
