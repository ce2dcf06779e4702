/**
 * RedisCmdStateStore (spec 001 StateStore) on a real redis-server and on a Redis Cluster: the
 * store table's cases (state-scenarios.ts; the same cases run on Cassandra in
 * state-cassandra.test.ts).
 */
import { cmdStateKeys, slotOfUser, type KeySpace, type Uuid } from "../../../core/index.js";
import { dumpKeys } from "../../harness/dump.js";
import { useCmdRedis } from "./fixture.js";
import { cmdStateScenarios } from "./state-scenarios.js";

for (const kind of ["single", "cluster"] as const) {
  cmdStateScenarios(`RedisCmdStateStore (${kind})`, () => {
    const fx = useCmdRedis(kind);
    return {
      get store() { return fx.store; },
      fresh: async () => fx.fresh(),
      dump: async (space: KeySpace, tenant: Uuid, users: readonly Uuid[]) => {
        const slots = [...new Set(users.map((u) => slotOfUser(tenant, u)))].sort((x, y) => x - y);
        const out: string[] = [];
        for (const slot of slots) {
          const k = cmdStateKeys(space, slot);
          out.push(await dumpKeys(fx.store.clientForKey(k.state), [k.state, k.index]));
        }
        return out.join("\n");
      },
    };
  });
}
