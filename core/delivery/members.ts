import { REDIS_CALL_MEMBER_BUDGET, uuidToHex, hexToUuid, type KeySpace, type Uuid } from "../base/index.js";
import { conversationKeys, TRANSIENT_SEQ } from "../conversation/index.js";
import type { RedisClient, RedisStore } from "../store/index.js";
import type { LocalConnections } from "./local.js";
import { metrics } from "./metrics.js";

/** Member reads (HMGET of REDIS_CALL_MEMBER_BUDGET users) one resolution keeps in flight at once. */
export const MEMBER_READS_IN_FLIGHT = 4;

/** Groups whose connected members' entries a node keeps between messages, at most (least recently used dropped). */
export const MEMBERS_CACHE_GROUPS = 256;
/** Entries those keep in all, at most (~100 B each: ~50 MB). */
export const MEMBERS_CACHE_ENTRIES = 500_000;

/** A large group's message whose audience is found among a node's connections. */
export interface MembersMessage {
  tenant: Uuid;
  conversation: Uuid;
  conversationSeq: number;
}

/** Members records whose audience is found ahead of their step (prefetch), at most. */
export const MEMBERS_PREFETCH_MAX = 256;

const messageKey = (m: MembersMessage) => `${m.tenant}|${m.conversation}|${m.conversationSeq}`;

/** The messages by group, in their order. */
function byGroup<T extends MembersMessage>(items: readonly T[]): T[][] {
  const by = new Map<string, T[]>();
  for (const m of items) {
    const k = m.tenant + m.conversation;
    const list = by.get(k);
    if (list) list.push(m); else by.set(k, [m]);
  }
  return [...by.values()];
}

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
  /** tenant + conversation → the member entries of users connected here, at a member version (least recently used first). */
  private readonly known = new Map<string, { version: string; entries: Map<Uuid, string | null> }>();
  private knownEntries = 0;

  constructor(
    private readonly store: RedisStore,
    private readonly keys: KeySpace,
    private readonly local: LocalConnections,
  ) {}

  /** Audiences being found for members records in hand (prefetch), by `tenant|conversation|seq`; taken by resolveItems. */
  private readonly early = new Map<string, Promise<Uuid[] | null>>();

  /**
   * Starts finding the audiences of these messages now (the relay's hand-off, while the step that
   * will push them still reads them from the log): resolveItems takes what this found.
   */
  prefetch(items: readonly MembersMessage[]): void {
    if (items.length === 0 || this.local.size === 0) return;
    // never more than a few steps' worth: what no step took (another node pushed it) goes
    if (this.early.size >= MEMBERS_PREFETCH_MAX) this.early.clear();
    for (const list of byGroup(items)) {
      const found = this.resolve(list[0]!.tenant, list[0]!.conversation, list.map((m) => m.conversationSeq)).catch(() => null);
      list.forEach((m, i) => this.early.set(messageKey(m), found.then((f) => f?.[i] ?? null)));
    }
  }

  /** The audience here of each message (in order), each group's entries read once, what prefetch found taken. */
  async resolveItems(items: readonly MembersMessage[]): Promise<Uuid[][]> {
    const out = new Map<MembersMessage, Uuid[]>();
    for (const list of byGroup(items)) {
      const keys = list.map(messageKey);
      const early = await Promise.all(keys.map((k) => this.early.get(k) ?? null));
      for (const k of keys) this.early.delete(k);
      const users = early.every((e) => e !== null) ? early as Uuid[][]
        : await this.resolve(list[0]!.tenant, list[0]!.conversation, list.map((m) => m.conversationSeq));
      list.forEach((m, i) => out.set(m, users[i]!));
    }
    return items.map((m) => out.get(m)!);
  }

  /**
   * The users connected here who are members visible at each of `seqs` (one list per seq, in
   * order): the member entries are read once for all of them, so a step holding several messages
   * of one group costs the reads of one; and they are kept while the group's member version stays
   * (MEMBERS_CACHE_GROUPS, MEMBERS_CACHE_ENTRIES): a group's next message costs one read of its
   * version, and of the entries of users who connected since. Every change of the member table
   * moves the version, and the version is read before the entries: entries kept under a version
   * are never older than it.
   */
  async resolve(tenant: Uuid, conversation: Uuid, seqs: readonly number[]): Promise<Uuid[][]> {
    const here = this.local.usersOf(tenant);
    if (here.size === 0) return seqs.map(() => []);
    const k = conversationKeys(this.keys, tenant, conversation);
    const client = this.store.clientFor(k.tag);
    // the member version, and the group's creation time (a group made again under the same id starts over at version 1)
    const [v, created] = await client.hmget(k.grpmeta, "version", "created_at");
    const version = `${v ?? "0"}|${created ?? ""}`;
    const id = tenant + conversation;
    let known = this.known.get(id);
    if (known && known.version === version) {
      const missing = [...here].filter((u) => !known!.entries.has(u));
      metrics.memberCache.inc({ outcome: missing.length === 0 ? "hit" : "partial" });
      if (missing.length > 0) await this.read(client, k.grpmembers, missing, known.entries);
    } else {
      metrics.memberCache.inc({ outcome: known ? "changed" : "miss" });
      known = { version, entries: await this.entries(client, k.grpmembers, here) };
    }
    this.keep(id, known);
    const users = [...here];
    return seqs.map((seq) => {
      // a message not in the log (TRANSIENT_SEQ): the members now
      const at = seq === TRANSIENT_SEQ ? Number.MAX_SAFE_INTEGER : seq;
      return users.filter((u) => visibleAt(known!.entries.get(u) ?? null, at));
    });
  }

  private keep(id: string, known: { version: string; entries: Map<Uuid, string | null> }): void {
    const prior = this.known.get(id);
    if (prior) {
      this.knownEntries -= prior.entries.size;
      this.known.delete(id);
    }
    this.known.set(id, known);
    this.knownEntries += known.entries.size;
    while (this.known.size > MEMBERS_CACHE_GROUPS || (this.knownEntries > MEMBERS_CACHE_ENTRIES && this.known.size > 1)) {
      const [oldest, value] = this.known.entries().next().value!;
      this.known.delete(oldest);
      this.knownEntries -= value.entries.size;
    }
  }

  /** The entries of `users` (HMGET, REDIS_CALL_MEMBER_BUDGET a call, MEMBER_READS_IN_FLIGHT at once) into `into`, null for none. */
  private async read(client: RedisClient, key: string, users: readonly Uuid[], into: Map<Uuid, string | null>): Promise<void> {
    const chunks: Uuid[][] = [];
    for (let i = 0; i < users.length; i += REDIS_CALL_MEMBER_BUDGET) chunks.push(users.slice(i, i + REDIS_CALL_MEMBER_BUDGET));
    for (let i = 0; i < chunks.length; i += MEMBER_READS_IN_FLIGHT) {
      const batch = chunks.slice(i, i + MEMBER_READS_IN_FLIGHT);
      const values = await Promise.all(batch.map((chunk) => client.hmget(key, ...chunk.map(uuidToHex))));
      batch.forEach((chunk, c) => values[c]!.forEach((v, j) => into.set(chunk[j]!, v)));
      metrics.memberReads.inc({ how: "connected" }, batch.reduce((n, c) => n + c.length, 0));
    }
  }

  /** The member-table values of the users connected here (null: no entry). */
  private async entries(client: RedisClient, key: string, here: ReadonlySet<Uuid>): Promise<Map<Uuid, string | null>> {
    const out = new Map<Uuid, string | null>();
    // up to one call's worth of users here: their entries at once (the group's size does not
    // matter then); beyond it, whichever of the two is smaller
    if (here.size <= REDIS_CALL_MEMBER_BUDGET || here.size <= await client.hlen(key)) {
      await this.read(client, key, [...here], out);
      return out;
    }
    // a scan of the group; HSCAN may return an entry twice (a rehash during the scan)
    let cursor = "0";
    do {
      const [next, fields] = await client.hscan(key, cursor, "COUNT", REDIS_CALL_MEMBER_BUDGET);
      for (let i = 0; i + 1 < fields.length; i += 2) {
        const user = hexToUuid(fields[i]!);
        if (here.has(user)) out.set(user, fields[i + 1]!);
      }
      metrics.memberReads.inc({ how: "members" }, fields.length / 2);
      cursor = next;
    } while (cursor !== "0");
    for (const u of here) if (!out.has(u)) out.set(u, null);
    return out;
  }
}
