/** Contract samples of the `registry` commands (test/cli/result-samples.ts). */
import type RegistryApply from "../../../cli/commands/registry/apply.js";
import type RegistryDelete from "../../../cli/commands/registry/delete.js";
import type RegistryDiff from "../../../cli/commands/registry/diff.js";
import type RegistryGet from "../../../cli/commands/registry/get.js";
import type RegistryList from "../../../cli/commands/registry/list.js";
import { samplesOf, type ResultOf } from "../result-samples.js";

const tenant = "8f14e45f-ceea-4a67-9c1b-2d3e4f5a6b7c";
const poll = {
  custom_type: "acme.poll.v1", schema_version: 1, delivery_class: "persistent" as const, counts_unread: true, affects_session_order: true, timeline_visible: true,
  anchor_mode: "own_seq" as const, preview_template: "[poll]", max_payload_bytes: 32768, minimum_client_version: "2.4",
};
const poll2 = { ...poll, schema_version: 2, max_payload_bytes: 4096 };
const apply = {
  tenant, fromVersion: 3, version: 4, changed: true, dryRun: false,
  changes: [
    { customType: "acme.note.v1", action: "delete" as const, fields: [], before: { ...poll, custom_type: "acme.note.v1" }, after: null },
    { customType: "acme.poll.v1", action: "update" as const, fields: ["schema_version", "max_payload_bytes"], before: poll, after: poll2 },
    { customType: "acme.vote.v1", action: "create" as const, fields: [], before: null, after: { ...poll, custom_type: "acme.vote.v1" } },
    { customType: "call_record", action: "unchanged" as const, fields: [], before: { ...poll, custom_type: "call_record" }, after: { ...poll, custom_type: "call_record" } },
  ],
};
const unchanged = { tenant, fromVersion: 4, version: 4, changed: false, dryRun: true, changes: [] };

export const samples = {
  "registry apply": samplesOf<ResultOf<typeof RegistryApply>>(apply, unchanged),
  "registry diff": samplesOf<ResultOf<typeof RegistryDiff>>(apply, unchanged),
  "registry delete": samplesOf<ResultOf<typeof RegistryDelete>>({ ...apply, changes: [apply.changes[0]!, apply.changes[1]!] }, unchanged),
  "registry get": samplesOf<ResultOf<typeof RegistryGet>>(
    { type: poll, builtIn: false, declared: true, version: 4 },
    { type: { ...poll, custom_type: "qim.recall.v1", anchor_mode: "anchor_target" }, builtIn: true, declared: false, version: 0 },
  ),
  "registry list": samplesOf<ResultOf<typeof RegistryList>>(
    { tenant, version: 4, types: [{ ...poll, builtIn: false, declared: true }, { ...poll, custom_type: "call_record", builtIn: true, declared: true }] },
    { tenant, version: 0, types: [] },
  ),
};
