/**
 * The `.bad` pending file of each node (issue 13): a CMD pending file that did not decode at
 * start-up is renamed `<file>.bad` (core/cmd-sync) and start-up goes on without it. So that an
 * operator sees it without reading every node's log, each node records its `.bad` file (or that
 * it has none) in one hash beside the node registry, `P:{g000}:cluster:cmdbad` (node id → JSON
 * `{"path", "setAsideAtMs"}`), shown by `qimctl cluster nodes`, `qimctl cmd status` and the
 * dashboard. Written once at start-up; the registry forgets nodes by itself, this hash is cleaned
 * by each node's own next start. The answering node's own entry is read from its disk instead, so
 * that it disappears as soon as the operator deletes the file.
 */
import { GLOBAL_TAG, type EngineRuntime, type KeySpace } from "../../core/index.js";
import type { CmdBadFile } from "../../admin-api/gen/qim/admin/v1/cmd.js";
import { maybeCmdOf } from "./cmd-local.js";

export function cmdBadKey(keys: KeySpace): string {
  return keys.key(GLOBAL_TAG, "cluster:cmdbad");
}

/** Records this node's `.bad` file (HSET), or that it has none (HDEL); a no-op outside a cluster or without the CMD module. */
export async function publishCmdBadFile(runtime: EngineRuntime): Promise<string | null> {
  const cmd = maybeCmdOf(runtime);
  const cluster = runtime.cluster;
  const bad = cmd?.badPendingFile() ?? null;
  if (!cmd || !cluster) return bad?.path ?? null;
  const key = cmdBadKey(runtime.keys);
  const client = runtime.store.clientForKey(key);
  if (bad) await client.hset(key, cluster.nodeId, JSON.stringify({ path: bad.path, setAsideAtMs: bad.setAsideAtMs }));
  else await client.hdel(key, cluster.nodeId);
  return bad?.path ?? null;
}

/** One recorded value: JSON, or a bare path as nodes recorded it before the time was kept (time 0: unknown). */
function parseRecorded(nodeId: string, value: string): CmdBadFile {
  try {
    const v = JSON.parse(value) as { path?: unknown; setAsideAtMs?: unknown };
    if (typeof v.path === "string") return { nodeId, path: v.path, setAsideAtMs: BigInt(typeof v.setAsideAtMs === "number" ? Math.trunc(v.setAsideAtMs) : 0) };
  } catch {
    // a bare path
  }
  return { nodeId, path: value, setAsideAtMs: 0n };
}

/** Every node's recorded `.bad` file, by node id. */
export async function readCmdBadFiles(runtime: EngineRuntime): Promise<Map<string, CmdBadFile>> {
  const key = cmdBadKey(runtime.keys);
  return new Map(Object.entries(await runtime.store.clientForKey(key).hgetall(key)).map(([id, v]) => [id, parseRecorded(id, v)]));
}

/**
 * The `.bad` files an operator must hear of: this server's own while it is on disk (node id empty
 * outside a cluster), then every other node's recorded one, by node id.
 */
export async function cmdBadFiles(runtime: EngineRuntime): Promise<CmdBadFile[]> {
  const own = maybeCmdOf(runtime)?.badPendingFile() ?? null;
  const nodeId = runtime.cluster?.nodeId ?? "";
  const others = runtime.cluster ? [...(await readCmdBadFiles(runtime)).values()].filter((b) => b.nodeId !== nodeId) : [];
  others.sort((a, b) => (a.nodeId < b.nodeId ? -1 : a.nodeId > b.nodeId ? 1 : 0));
  return [...(own ? [{ nodeId, path: own.path, setAsideAtMs: BigInt(own.setAsideAtMs) }] : []), ...others];
}
