import type cassandra from "cassandra-driver";
import { hexToUuid, uuidToHex, type Uuid, type UuidHex } from "../base/index.js";
import type { KeySpace } from "../base/index.js";
import { userKeys } from "./keys.js";
import { CassandraConnection, cassandraOptionsFromEnv, type CassandraOptions } from "../cassandra/index.js";
import type { RedisStore } from "../store/index.js";

/** The kind of a conversation in a user's set (groups only so far). */
export type ConversationKind = "group";

/** One conversation entering one user's set: a pending registration, written once. */
export interface RegistrationItem {
  tenant: Uuid;
  user: Uuid;
  conversation: Uuid;
  kind: ConversationKind;
  /** created_at (ms) of the message that brought the conversation into the user's set. */
  firstSeenAt: number;
}

/** A row of the authority: `user_conversation_state` (ADR-0021 §4, implementation revision). */
export interface ConversationStateRow {
  conversation: Uuid;
  kind: ConversationKind;
  firstSeenAt: number;
  updatedAt: number;
}

/**
 * The conversation-set authority (ADR-0021 §4, spec 002 §1): which conversations each user has,
 * forever (no TTL). The session projection is rebuilt from it, per user, after a loss. Written
 * only when a conversation first enters a user's set, never per message.
 */
export interface ConversationStateAuthority {
  readonly kind: "cassandra" | "redis-hash";
  /** Human-readable: where the rows live (for start-up logs and `projection status`). */
  describe(): string;
  /** Creates what it needs (idempotent); fails if the backend cannot be reached. */
  init(): Promise<void>;
  /**
   * Records items; idempotent: an item already present keeps its first first_seen_at. A batch
   * either fails as a whole (throws) or every item of it is stored.
   */
  register(items: RegistrationItem[]): Promise<void>;
  /** One user's whole set (≤ max_conversations_per_user rows; one partition read). */
  conversations(tenant: Uuid, user: Uuid): Promise<ConversationStateRow[]>;
  /** Removes rows (drills and repairs only; the engine never deletes). */
  remove(tenant: Uuid, user: Uuid, conversations: Uuid[]): Promise<void>;
  close(): Promise<void>;
}

/** Pending-queue item text: "tenantHex|userHex|conversationHex|kind|createdAt". */
export function encodeRegistration(i: RegistrationItem): string {
  return encodeRegistrationHex(uuidToHex(i.tenant), uuidToHex(i.user), uuidToHex(i.conversation), i.kind, i.firstSeenAt);
}

/** encodeRegistration from the ids' hex forms, which the session projection has at hand. */
export function encodeRegistrationHex(tenantHex: UuidHex, userHex: UuidHex, conversationHex: UuidHex, kind: RegistrationItem["kind"], firstSeenAt: number): string {
  return `${tenantHex}|${userHex}|${conversationHex}|${kind}|${firstSeenAt}`;
}

export function decodeRegistration(text: string): RegistrationItem {
  const f = text.split("|");
  const malformed = () => new Error(`malformed pending registration: ${JSON.stringify(text.slice(0, 120))}`);
  if (f.length !== 5 || f[3] !== "group" || !/^\d{1,16}$/.test(f[4]!)) throw malformed();
  const firstSeenAt = Number(f[4]);
  if (!Number.isSafeInteger(firstSeenAt)) throw malformed();
  try {
    return { tenant: hexToUuid(f[0]!), user: hexToUuid(f[1]!), conversation: hexToUuid(f[2]!), kind: "group", firstSeenAt };
  } catch {
    throw malformed();
  }
}

/**
 * The development fallback (ADR-0021 §4): a Redis hash per user on the user's own `{uNNN}` tag,
 * conversation hex → "kind|firstSeenAt|updatedAt". It lives in the same store as the projection,
 * so it is NOT an authority guarantee: losing the instance loses both. Use Cassandra in production.
 */
export class RedisHashAuthority implements ConversationStateAuthority {
  readonly kind = "redis-hash" as const;

  constructor(private readonly store: RedisStore, private readonly keys: KeySpace, private readonly now: () => number = Date.now) {}

  describe(): string {
    return `redis-hash (development fallback, not an authority guarantee; keys ${this.keys.prefix}:{uNNN}:ucs:*)`;
  }

  async init(): Promise<void> {}

  async register(items: RegistrationItem[]): Promise<void> {
    const keysOf = items.map((i) => userKeys(this.keys, i.tenant, i.user));
    const updatedAt = this.now();
    await Promise.all(this.store.byTarget(keysOf.map((k) => k.tag)).map(async ({ client, idx }) => {
      const p = client.pipeline();
      for (const j of idx) {
        const i = items[j]!;
        p.hsetnx(keysOf[j]!.ucsHash, uuidToHex(i.conversation), `${i.kind}|${i.firstSeenAt}|${updatedAt}`);
      }
      for (const [err] of (await p.exec()) ?? []) if (err) throw err;
    }));
  }

  async conversations(tenant: Uuid, user: Uuid): Promise<ConversationStateRow[]> {
    const k = userKeys(this.keys, tenant, user);
    const all = await this.store.clientFor(k.tag).hgetall(k.ucsHash);
    return Object.entries(all).map(([conv, v]) => {
      const [kind, first, updated] = v.split("|");
      return { conversation: hexToUuid(conv), kind: kind as ConversationKind, firstSeenAt: Number(first), updatedAt: Number(updated) };
    });
  }

  async remove(tenant: Uuid, user: Uuid, conversations: Uuid[]): Promise<void> {
    if (conversations.length === 0) return;
    const k = userKeys(this.keys, tenant, user);
    await this.store.clientFor(k.tag).hdel(k.ucsHash, ...conversations.map(uuidToHex));
  }

  async close(): Promise<void> {}
}

/**
 * The authority on Cassandra/Scylla (cassandra-driver, prepared statements): table
 * `user_conversation_state((tenant_id, user_id), conversation_id)` with kind, first_seen_at,
 * updated_at and no TTL. Keyspace and table are created idempotently at init().
 *
 * register() reads the batch's partitions first and inserts only the rows that are missing, so a
 * repeated registration (after a projection loss, or two registration tasks racing) keeps the
 * first first_seen_at instead of overwriting it; it costs one partition read per user in the
 * batch, and registrations happen only when a conversation first enters a user's set.
 */
export class CassandraAuthority implements ConversationStateAuthority {
  readonly kind = "cassandra" as const;
  private readonly conn: CassandraConnection;
  private readonly now: () => number;

  constructor(private readonly opts: CassandraOptions) {
    this.conn = new CassandraConnection(opts);
    this.now = opts.now ?? Date.now;
  }

  private get client(): cassandra.Client {
    return this.conn.client;
  }

  describe(): string {
    const user = this.opts.credentials ? `, user ${this.opts.credentials.username}` : "";
    const tls = this.opts.tls ? `, TLS${this.opts.tls.certPem ? " with a client certificate" : ""}` : "";
    return `cassandra ${this.opts.contactPoints.join(",")} keyspace ${this.conn.keyspace} (consistency ${this.conn.consistencyName}${user}${tls})`;
  }

  private table(): string {
    return `${this.conn.keyspace}.user_conversation_state`;
  }

  /** Connects and creates the keyspace and table if missing (CassandraConnection.open: one line on failure). */
  async init(): Promise<void> {
    await this.conn.open(async (client) => {
      await client.execute(
        `CREATE TABLE IF NOT EXISTS ${this.table()} (
           tenant_id uuid, user_id uuid, conversation_id uuid,
           kind text, first_seen_at timestamp, updated_at timestamp,
           PRIMARY KEY ((tenant_id, user_id), conversation_id))`,
        [], { prepare: false });
    });
  }

  async register(items: RegistrationItem[]): Promise<void> {
    if (items.length === 0) return;
    const byUser = new Map<string, RegistrationItem[]>();
    for (const i of items) {
      const ref = `${i.tenant}|${i.user}`;
      const list = byUser.get(ref);
      if (list) list.push(i); else byUser.set(ref, [i]);
    }
    const updatedAt = new Date(this.now());
    await Promise.all([...byUser.values()].map(async (list) => {
      const { tenant, user } = list[0]!;
      const existing = await this.client.execute(
        `SELECT conversation_id FROM ${this.table()} WHERE tenant_id = ? AND user_id = ? AND conversation_id IN ?`,
        [tenant, user, [...new Set(list.map((i) => i.conversation))]]);
      const have = new Set(existing.rows.map((r) => String(r.conversation_id)));
      const missing = new Map<Uuid, RegistrationItem>();
      for (const i of list) {
        if (have.has(i.conversation)) continue;
        const seen = missing.get(i.conversation);
        if (!seen || i.firstSeenAt < seen.firstSeenAt) missing.set(i.conversation, i);
      }
      if (missing.size === 0) return;
      // one partition: an unlogged batch is one mutation on one replica set
      await this.client.batch([...missing.values()].map((i) => ({
        query: `INSERT INTO ${this.table()} (tenant_id, user_id, conversation_id, kind, first_seen_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)`,
        params: [i.tenant, i.user, i.conversation, i.kind, new Date(i.firstSeenAt), updatedAt],
      })), { prepare: true, logged: false });
    }));
  }

  async conversations(tenant: Uuid, user: Uuid): Promise<ConversationStateRow[]> {
    const rows: ConversationStateRow[] = [];
    const query = `SELECT conversation_id, kind, first_seen_at, updated_at FROM ${this.table()} WHERE tenant_id = ? AND user_id = ?`;
    let pageState: string | undefined;
    do {
      const res = await this.client.execute(query, [tenant, user], { fetchSize: 1000, ...(pageState ? { pageState } : {}) });
      for (const r of res.rows) {
        rows.push({
          // a uuid column: the driver's text is canonical; a surprise there is an internal error, not bad input
          conversation: hexToUuid(String(r.conversation_id).replace(/-/g, "")),
          kind: r.kind as ConversationKind,
          firstSeenAt: (r.first_seen_at as Date | null)?.getTime() ?? 0,
          updatedAt: (r.updated_at as Date | null)?.getTime() ?? 0,
        });
      }
      pageState = res.pageState ?? undefined;
    } while (pageState);
    return rows;
  }

  async remove(tenant: Uuid, user: Uuid, conversations: Uuid[]): Promise<void> {
    if (conversations.length === 0) return;
    await this.client.execute(`DELETE FROM ${this.table()} WHERE tenant_id = ? AND user_id = ? AND conversation_id IN ?`, [tenant, user, conversations]);
  }

  async close(): Promise<void> {
    await this.client.shutdown();
  }
}

/**
 * The authority a process should use: Cassandra when contact points are configured
 * (QIM_CASSANDRA_CONTACT_POINTS), otherwise the Redis-hash development fallback.
 */
export function authorityFromEnv(store: RedisStore, keys: KeySpace, env: NodeJS.ProcessEnv = process.env): ConversationStateAuthority {
  const opts = cassandraOptionsFromEnv(env);
  return opts ? new CassandraAuthority(opts) : new RedisHashAuthority(store, keys);
}
