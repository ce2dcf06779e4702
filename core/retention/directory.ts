import { RETENTION_DIRECTORY_PAGE, uuidToHex, type Uuid } from "../base/index.js";
import type { Fence, UnitGate } from "../cluster/index.js";
import type { RedisStore } from "../store/index.js";

/**
 * Walks one bucket's directory — a lex-ordered zset of "tenantHex|…" refs (the bucket's
 * conversations, or its CMD channels) — in pages of RETENTION_DIRECTORY_PAGE, only `tenant`'s refs
 * when given. Each page is worked inside the bucket's relay gate, so that a node hands the bucket
 * over once the page in flight is done; no page is worked without the fence. `visit` answers false
 * to stop the walk (the bucket was fenced away). `extra` refs (a dry run's, which it did not write
 * into the directory) are walked with the last page, each once.
 */
export async function walkBucketDirectory(
  store: RedisStore, gate: UnitGate, bucket: number, directory: string, tenant: Uuid | undefined,
  visit: (ref: string, fence: Fence) => Promise<boolean>, extra: readonly string[] = [],
): Promise<void> {
  const client = store.clientForKey(directory);
  const prefix = tenant ? `${uuidToHex(tenant)}|` : null;
  let min = prefix ? `[${prefix}` : "-";
  const max = prefix ? `(${uuidToHex(tenant!)}}` : "+";
  const pending = extra.filter((r) => prefix === null || r.startsWith(prefix)).sort();
  for (;;) {
    const page = await client.zrangebylex(directory, min, max, "LIMIT", 0, RETENTION_DIRECTORY_PAGE);
    const last = page.length < RETENTION_DIRECTORY_PAGE;
    const refs = last && pending.length > 0 ? [...new Set([...page, ...pending])] : page;
    if (refs.length === 0) return;
    const fence = gate.enter("relay", bucket);
    if (!fence) return;
    try {
      for (const ref of refs) if (!(await visit(ref, fence))) return;
    } finally {
      gate.leave("relay", bucket);
    }
    if (last) return;
    min = `(${page[page.length - 1]}`;
  }
}
