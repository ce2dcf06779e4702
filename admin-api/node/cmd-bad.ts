/**
 * The `.bad` pending file of each node (issue 13): a CMD pending file that did not decode at
 * start-up is renamed `<file>.bad` (core/cmd-sync) and start-up goes on without it. So that an
 * operator sees it without reading every node's log, each node records its `.bad` path (or that
 * it has none) in one hash beside the node registry, `P:{g000}:cluster:cmdbad` (node id → path),
 * and `qimctl cluster nodes` shows it per node. Written once at start-up; the registry forgets
 * nodes by itself, this hash is cleaned by each node's own next start.
 */
import { GLOBAL_TAG, type EngineRuntime, type KeySpace } from "../../core/index.js";
import { maybeCmdOf } from "./cmd-local.js";

export function cmdBadKey(keys: KeySpace): string {
  return keys.key(GLOBAL_TAG, "cluster:cmdbad");
}

/** Records this node's `.bad` file (HSET), or that it has none (HDEL); a no-op outside a cluster or without the CMD module. */
export async function publishCmdBadFile(runtime: EngineRuntime): Promise<string | null> {
  const cmd = maybeCmdOf(runtime);
  const cluster = runtime.cluster;
  if (!cmd || !cluster) return cmd?.badFile ?? null;
  const key = cmdBadKey(runtime.keys);
  const client = runtime.store.clientForKey(key);
  if (cmd.badFile) await client.hset(key, cluster.nodeId, cmd.badFile);
  else await client.hdel(key, cluster.nodeId);
  return cmd.badFile;
}

/** Every node's recorded `.bad` file, by node id. */
export async function readCmdBadFiles(runtime: EngineRuntime): Promise<Map<string, string>> {
  const key = cmdBadKey(runtime.keys);
  return new Map(Object.entries(await runtime.store.clientForKey(key).hgetall(key)));
}
