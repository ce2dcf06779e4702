import {
  FailedPreconditionError, InvalidArgumentError, NotFoundError, QimError, REGISTRY_CACHE_TENANTS_MAX, REGISTRY_MAX_TYPES, REGISTRY_RELOAD_INTERVAL_MS, uuidToHex,
  type KeySpace, type Uuid,
} from "../base/index.js";
import type { RedisStore } from "../store/index.js";
import {
  BUILT_IN_BY_NAME, changedFields, decodeDeclaration, encodeDeclaration, isReplaceableBuiltIn, parseCustomTypeName, previewOf, RESERVED_PREFIX, type MessageTypeDeclaration,
} from "./declaration.js";
import { REGISTRY_TYPE_FIELD_PREFIX, REGISTRY_VERSION_FIELD, registryKeys } from "./keys.js";
import { registryMetrics as metrics } from "./metrics.js";
import { applyTypesScript } from "./scripts.js";

/**
 * One version of a tenant's registry, whole: what one send applies (never a mix of two versions).
 * Immutable: a reload makes a new one.
 */
export interface RegistrySnapshot {
  tenant: Uuid;
  /** The registry's version; 0 before the tenant's first change (only the built-in types). */
  version: number;
  /** Every type the tenant's messages may have: the built-ins, and the tenant's declarations (which replace a replaceable built-in). */
  types: ReadonlyMap<string, MessageTypeDeclaration>;
  /** The types the tenant declared (a subset of `types`' names). */
  declared: ReadonlySet<string>;
  /** What a device that does not render a content type shows (previewOf over `types`): "" for an ordinary message. */
  preview(contentType: string): string;
}

function snapshotOf(tenant: Uuid, version: number, types: ReadonlyMap<string, MessageTypeDeclaration>, declared: ReadonlySet<string>): RegistrySnapshot {
  return { tenant, version, types, declared, preview: (contentType) => previewOf(contentType, types) };
}

/** A registry change's effect on one type. */
export interface TypeChange {
  customType: string;
  action: "create" | "update" | "delete" | "unchanged";
  /** The spec names of the fields an update changes. */
  fields: string[];
  before: MessageTypeDeclaration | null;
  after: MessageTypeDeclaration | null;
}

export interface RegistryChangeRequest {
  tenant: Uuid;
  /** Declarations to create or replace (parsed: parseDeclaration). */
  put: readonly MessageTypeDeclaration[];
  /** Types to delete. */
  delete: readonly string[];
  /** Also delete every declared type not in `put` (a file that is the whole registry). */
  prune?: boolean;
  /** Deleting a type the tenant did not declare is not an error (a re-run of a delete). */
  ignoreMissing?: boolean;
  /** Refuse unless the registry is at this version (the version a diff was read at). */
  expectVersion?: number | null;
  dryRun?: boolean;
}

export interface RegistryChangeResult {
  tenant: Uuid;
  /** The version the change was computed against. */
  fromVersion: number;
  /** The version after it (fromVersion when nothing changed or on a dry run). */
  version: number;
  changed: boolean;
  changes: TypeChange[];
  dryRun: boolean;
}

/** A change made against a registry version another change replaced. */
export class RegistryVersionConflictError extends QimError {
  constructor(expected: number, actual: number) {
    super("REGISTRY_VERSION_CONFLICT", `the message-type registry is at version ${actual}, expected ${expected}: another change landed since it was read; read it again (qimctl registry diff) and re-apply`, { expected, actual });
    this.name = "RegistryVersionConflictError";
  }
}

/** One change names at most REGISTRY_MAX_TYPES declarations and as many deletes (a tenant holds no more). */
export function checkChangeSize(puts: number, deletes: number): void {
  if (puts > REGISTRY_MAX_TYPES) throw new InvalidArgumentError("put", `one change declares at most ${REGISTRY_MAX_TYPES} types (a tenant holds no more); this one ${puts}`);
  if (deletes > REGISTRY_MAX_TYPES) throw new InvalidArgumentError("delete", `one change deletes at most ${REGISTRY_MAX_TYPES} types; this one ${deletes}`);
}

export interface MessageTypeRegistryOptions {
  /** registry_reload_interval: how old a snapshot a send may use (REGISTRY_RELOAD_INTERVAL_MS). */
  reloadIntervalMs?: number;
  /** The most tenants held in memory (REGISTRY_CACHE_TENANTS_MAX). */
  cacheTenantsMax?: number;
  now?: () => number;
}

interface Cached {
  snapshot: RegistrySnapshot;
  /** When the read that confirmed it was issued (not answered: the bound counts from the earlier moment). */
  checkedAt: number;
  refreshing: Promise<RegistrySnapshot> | null;
}

const NONE_DECLARED: ReadonlySet<string> = new Set();

/**
 * The per-tenant custom message type registry (issue 29, spec 003 §3) and its hot reload: each node
 * keeps the snapshot of every tenant it sends for, and re-reads the version (one HGET) when the
 * snapshot is older than registry_reload_interval as a send asks for it, reading the registry whole
 * (one HGETALL, at most REGISTRY_MAX_TYPES types) only when the version moved. So a change is in
 * force on every node for every send that starts registry_reload_interval after it committed, with
 * no restart and no message between nodes; a node idle for a tenant reads nothing for it.
 * Concurrent sends share one read. A change is one script (lua/registry/applyTypes) with one
 * version step: a snapshot is one version whole.
 */
export class MessageTypeRegistry {
  private readonly cache = new Map<string, Cached>();
  private readonly loading = new Map<string, Promise<RegistrySnapshot>>();
  private readonly reloadIntervalMs: number;
  private readonly cacheTenantsMax: number;
  private readonly now: () => number;

  constructor(private readonly store: RedisStore, private readonly space: KeySpace, opts: MessageTypeRegistryOptions = {}) {
    this.reloadIntervalMs = opts.reloadIntervalMs ?? REGISTRY_RELOAD_INTERVAL_MS;
    this.cacheTenantsMax = opts.cacheTenantsMax ?? REGISTRY_CACHE_TENANTS_MAX;
    this.now = opts.now ?? Date.now;
  }

  /** The snapshot a send applies: read no longer than registry_reload_interval before this call. */
  current(tenant: Uuid): Promise<RegistrySnapshot> | RegistrySnapshot {
    const hex = uuidToHex(tenant);
    const e = this.cache.get(hex);
    if (e) {
      if (this.now() - e.checkedAt < this.reloadIntervalMs) return e.snapshot;
      return (e.refreshing ??= this.revalidate(tenant, hex, e));
    }
    let p = this.loading.get(hex);
    if (!p) {
      const startedAt = this.now();
      p = this.readWhole(tenant).then((snapshot) => {
        this.remember(hex, snapshot, startedAt);
        return snapshot;
      }).finally(() => this.loading.delete(hex));
      this.loading.set(hex, p);
    }
    return p;
  }

  /**
   * The snapshot held for the tenant, whatever its age, without waiting (the built-ins alone when
   * none is held yet): for a frame's encoding, which cannot wait for a read. A held snapshot older
   * than the reload interval, or none, starts a read in the background for the next caller.
   */
  peek(tenant: Uuid): RegistrySnapshot {
    const e = this.cache.get(uuidToHex(tenant));
    if (!e || this.now() - e.checkedAt >= this.reloadIntervalMs) {
      const p = this.current(tenant);
      if (p instanceof Promise) p.catch(() => undefined);
    }
    return e?.snapshot ?? snapshotOf(tenant, 0, BUILT_IN_BY_NAME, NONE_DECLARED);
  }

  /** The registry as stored now (the admin API's reads). */
  read(tenant: Uuid): Promise<RegistrySnapshot> {
    return this.readWhole(tenant);
  }

  /** One declaration: the tenant's, or the built-in; NOT_FOUND when neither. */
  async get(tenant: Uuid, customType: string): Promise<{ declaration: MessageTypeDeclaration; builtIn: boolean; declared: boolean; version: number }> {
    const name = parseCustomTypeName(customType);
    const s = await this.readWhole(tenant);
    const d = s.types.get(name);
    if (!d) throw new NotFoundError("message type", name);
    return { declaration: d, builtIn: BUILT_IN_BY_NAME.has(name), declared: s.declared.has(name), version: s.version };
  }

  /**
   * Applies a change, or says what it would do (dryRun). Computed against the registry as read, and
   * applied only if it is still at that version (a concurrent change is a
   * RegistryVersionConflictError, nothing written). A change that changes nothing keeps the version.
   */
  async apply(req: RegistryChangeRequest): Promise<RegistryChangeResult> {
    checkChangeSize(req.put.length, req.delete.length);
    const names = new Set<string>();
    for (const d of req.put) {
      if (names.has(d.customType)) throw new InvalidArgumentError("custom_type", `${d.customType} is declared twice in one change`);
      names.add(d.customType);
    }
    const deletes = req.delete.map((n, i) => parseCustomTypeName(n, `delete[${i}]`));
    for (const n of deletes) {
      if (names.has(n)) throw new InvalidArgumentError("delete", `${n} is both declared and deleted in one change`);
      if (n.startsWith(RESERVED_PREFIX)) throw new InvalidArgumentError("delete", `${n} is one of the engine's own types: it cannot be deleted`);
    }
    const s = await this.readWhole(req.tenant);
    const expect = req.expectVersion ?? null;
    if (expect !== null && expect !== s.version) throw new RegistryVersionConflictError(expect, s.version);

    const declaredNow = new Map([...s.declared].map((n) => [n, s.types.get(n)!]));
    const changes: TypeChange[] = [];
    for (const d of req.put) {
      const before = declaredNow.get(d.customType) ?? null;
      const fields = before ? changedFields(before, d) : [];
      changes.push({ customType: d.customType, action: !before ? "create" : fields.length > 0 ? "update" : "unchanged", fields, before, after: d });
    }
    const toDelete = new Set(deletes);
    if (req.prune) for (const n of declaredNow.keys()) if (!names.has(n)) toDelete.add(n);
    for (const n of toDelete) {
      const before = declaredNow.get(n) ?? null;
      if (!before) {
        if (req.ignoreMissing) continue;
        throw new NotFoundError("message type", `${n} (declared by this tenant; built-in defaults cannot be deleted)`);
      }
      changes.push({ customType: n, action: "delete", fields: [], before, after: null });
    }
    changes.sort((a, b) => (a.customType < b.customType ? -1 : a.customType > b.customType ? 1 : 0));
    const effective = changes.filter((c) => c.action !== "unchanged");
    const after = declaredNow.size + changes.filter((c) => c.action === "create").length - changes.filter((c) => c.action === "delete").length;
    if (after > REGISTRY_MAX_TYPES) throw new FailedPreconditionError(`the change would give the tenant ${after} message types; at most ${REGISTRY_MAX_TYPES}`, { types: after, max: REGISTRY_MAX_TYPES });
    const base = { tenant: req.tenant, fromVersion: s.version, changes, dryRun: req.dryRun === true };
    if (req.dryRun || effective.length === 0) {
      if (!req.dryRun) metrics.changes.inc({ result: "unchanged" });
      return { ...base, version: s.version, changed: false };
    }

    const k = registryKeys(this.space, req.tenant);
    const reply = await applyTypesScript.run(this.store.clientFor(k.tag), k, {
      expectVersion: s.version, max: REGISTRY_MAX_TYPES,
      changes: effective.map((c) => [c.customType, c.after ? encodeDeclaration(c.after) : ""] as const),
    });
    if (reply.status === "REGISTRY_VERSION_MOVED") {
      metrics.changes.inc({ result: "conflict" });
      throw new RegistryVersionConflictError(s.version, reply.version);
    }
    if (reply.status === "REGISTRY_FULL") {
      metrics.changes.inc({ result: "full" });
      throw new FailedPreconditionError(`the change would give the tenant ${reply.types} message types; at most ${REGISTRY_MAX_TYPES}`, { types: reply.types, max: REGISTRY_MAX_TYPES });
    }
    metrics.changes.inc({ result: reply.changed ? "applied" : "unchanged" });
    // this node uses the new version at once; the others within registry_reload_interval
    this.forget(uuidToHex(req.tenant));
    return { ...base, version: reply.version, changed: reply.changed };
  }

  private async revalidate(tenant: Uuid, hex: string, e: Cached): Promise<RegistrySnapshot> {
    const startedAt = this.now();
    const stop = metrics.reloadSeconds.startTimer();
    try {
      const k = registryKeys(this.space, tenant);
      const v = Number((await this.store.clientFor(k.tag).hget(k.typereg, REGISTRY_VERSION_FIELD)) ?? "0");
      if (v === e.snapshot.version) {
        metrics.reloads.inc({ result: "unchanged" });
        e.checkedAt = startedAt;
        return e.snapshot;
      }
      const snapshot = await this.readWhole(tenant);
      this.remember(hex, snapshot, startedAt);
      return snapshot;
    } catch (err) {
      metrics.reloads.inc({ result: "failed" });
      throw err;
    } finally {
      e.refreshing = null;
      stop();
    }
  }

  private async readWhole(tenant: Uuid): Promise<RegistrySnapshot> {
    const k = registryKeys(this.space, tenant);
    const raw = await this.store.clientFor(k.tag).hgetall(k.typereg);
    const types = new Map(BUILT_IN_BY_NAME);
    const declared = new Set<string>();
    let version = 0;
    for (const [field, value] of Object.entries(raw)) {
      if (field === REGISTRY_VERSION_FIELD) {
        version = Number(value);
        continue;
      }
      if (!field.startsWith(REGISTRY_TYPE_FIELD_PREFIX)) continue;
      const name = field.slice(REGISTRY_TYPE_FIELD_PREFIX.length);
      if (BUILT_IN_BY_NAME.has(name) && !isReplaceableBuiltIn(name)) continue;
      types.set(name, decodeDeclaration(value, name));
      declared.add(name);
    }
    metrics.reloads.inc({ result: "loaded" });
    return snapshotOf(tenant, version, types, declared);
  }

  private remember(hex: string, snapshot: RegistrySnapshot, checkedAt: number): void {
    const prev = this.cache.get(hex);
    // a slower read of an older version never replaces a newer one
    if (prev && prev.snapshot.version > snapshot.version) return;
    this.cache.delete(hex);
    this.cache.set(hex, { snapshot, checkedAt, refreshing: null });
    while (this.cache.size > this.cacheTenantsMax) this.cache.delete(this.cache.keys().next().value!);
    metrics.tenants.set(this.cache.size);
  }

  private forget(hex: string): void {
    this.cache.delete(hex);
    metrics.tenants.set(this.cache.size);
  }
}
