import { REDIS_CALL_MEMBER_BUDGET, uuidToHex, hexToUuid, type KeySpace, type Uuid } from "../base/index.js";
import { conversationKeys } from "../conversation/index.js";
import type { RedisStore } from "../store/index.js";
import type { LocalConnections } from "./local.js";
import { metrics } from "./metrics.js";

/** Member reads (HMGET of REDIS_CALL_MEMBER_BUDGET users) one resolution keeps in flight at once. */
export const MEMBER_READS_IN_FLIGHT = 4;

/** Whether a member-table value ("joinedAt|leftAt|state", ADR-0021) makes `seq` visible: joinedAt < seq and (no leftAt or seq < leftAt). */
export function visibleAt(raw: string | null, seq: number): boolean {
  if (raw === null) return false;
  const a = raw.indexOf("|");
  const b = raw.indexOf("|", a + 1);
  if (a < 0 || b < 0) return false;
  const joinedAt = Number(raw.slice(0, a));
  const left = raw.slice(a + 1, b);
  return joinedAt < seq && (left === "" || seq < Number(left));
}

/**
 * The audience of a members record (issue 27) among this node's connections: the users connected
 * here who are members visible at the seq — the rule of the fanout job's expandAudience, so the
 * devices get exactly what the job's chunks would have pushed them (a rejoin after the seq that
 * replaced a user's interval leaves them out, as there). Bounded either way, never a read that
 * grows with the group in one call: with at most REDIS_CALL_MEMBER_BUDGET users of the tenant here,
 * or fewer than the group has member entries, their entries are read (HMGET, that many a call);
 * otherwise the member table is scanned (HSCAN COUNT REDIS_CALL_MEMBER_BUDGET) and kept where
 * connected.
 */
export class MembersAudience {
  constructor(
    private readonly store: RedisStore,
    private readonly keys: KeySpace,
    private readonly local: LocalConnections,
  ) {}

  /**
   * The users connected here who are members visible at each of `seqs` (one list per seq, in
   * order): the member entries are read once for all of them, so a step holding several messages
   * of one group costs the reads of one.
   */
  async resolve(tenant: Uuid, conversation: Uuid, seqs: readonly number[]): Promise<Uuid[][]> {
    const entries = await this.entries(tenant, conversation);
    return seqs.map((seq) => entries.filter(([, raw]) => visibleAt(raw, seq)).map(([user]) => user));
  }

  /** The member-table values of the users connected here who have one. */
  private async entries(tenant: Uuid, conversation: Uuid): Promise<[Uuid, string][]> {
    const here = this.local.usersOf(tenant);
    if (here.size === 0) return [];
    const k = conversationKeys(this.keys, tenant, conversation);
    const client = this.store.clientFor(k.tag);
    const out: [Uuid, string][] = [];
    // up to one call's worth of users here: their entries at once (the group's size does not
    // matter then); beyond it, whichever of the two is smaller
    if (here.size <= REDIS_CALL_MEMBER_BUDGET || here.size <= await client.hlen(k.grpmembers)) {
      const users = [...here];
      const chunks: Uuid[][] = [];
      for (let i = 0; i < users.length; i += REDIS_CALL_MEMBER_BUDGET) chunks.push(users.slice(i, i + REDIS_CALL_MEMBER_BUDGET));
      // a few calls in flight at once, each within the budget
      for (let i = 0; i < chunks.length; i += MEMBER_READS_IN_FLIGHT) {
        const batch = chunks.slice(i, i + MEMBER_READS_IN_FLIGHT);
        const values = await Promise.all(batch.map((chunk) => client.hmget(k.grpmembers, ...chunk.map(uuidToHex))));
        batch.forEach((chunk, c) => values[c]!.forEach((v, j) => { if (v !== null) out.push([chunk[j]!, v]); }));
        metrics.memberReads.inc({ how: "connected" }, batch.reduce((n, c) => n + c.length, 0));
      }
      return out;
    }
    // HSCAN may return an entry twice (a rehash during the scan)
    const seen = new Set<Uuid>();
    let cursor = "0";
    do {
      const [next, fields] = await client.hscan(k.grpmembers, cursor, "COUNT", REDIS_CALL_MEMBER_BUDGET);
      for (let i = 0; i + 1 < fields.length; i += 2) {
        const user = hexToUuid(fields[i]!);
        if (here.has(user) && !seen.has(user)) {
          seen.add(user);
          out.push([user, fields[i + 1]!]);
        }
      }
      metrics.memberReads.inc({ how: "members" }, fields.length / 2);
      cursor = next;
    } while (cursor !== "0");
    return out;
  }
}
