/** The JSON results of the `registry` commands (docs/operator-guide.md "Message types"); cli/result.ts says how they are declared. */
import type { AdminMessageType, AdminTypeChange, ApplyTypesResponse, GetTypeResponse, ListTypesResponse } from "../../admin-api/client.js";
import { resultFrom } from "../result.js";

/** A declaration in force, by the spec's names as in a registry file (snake_case), every field. */
export function messageTypeResult(t: AdminMessageType) {
  return {
    custom_type: t.customType,
    schema_version: t.schemaVersion,
    delivery_class: t.deliveryClass as "persistent" | "ephemeral" | "ephemeral_aggregate",
    counts_unread: t.countsUnread,
    affects_session_order: t.affectsSessionOrder,
    timeline_visible: t.timelineVisible,
    anchor_mode: t.anchorMode as "own_seq" | "anchor_target" | "none",
    preview_template: t.previewTemplate,
    max_payload_bytes: t.maxPayloadBytes,
    minimum_client_version: t.minimumClientVersion,
  };
}
export type MessageTypeResult = ReturnType<typeof messageTypeResult>;

export const typeChangeResult = resultFrom<AdminTypeChange>()({
  customType: "wire",
  action: (r) => r.action as "create" | "update" | "delete" | "unchanged",
  /** An update's changed fields, by the spec's names. */
  fields: "wire",
  before: (r) => (r.before ? messageTypeResult(r.before) : null),
  after: (r) => (r.after ? messageTypeResult(r.after) : null),
});
export type TypeChangeResult = ReturnType<typeof typeChangeResult>;

export const registryApplyResult = resultFrom<ApplyTypesResponse>()({
  tenant: "wire",
  /** The registry version the change was computed against. */
  fromVersion: "u64",
  /** The version after it (fromVersion when nothing changed, and on a dry run). */
  version: "u64",
  changed: "wire",
  changes: (r) => r.changes.map(typeChangeResult),
  dryRun: "wire",
});
export type RegistryApplyResult = ReturnType<typeof registryApplyResult>;

export const registryGetResult = resultFrom<GetTypeResponse>()({
  type: (r) => messageTypeResult(r.type!),
  /** One of the engine's own types (qim.*, call_record). */
  builtIn: "wire",
  /** Declared by the tenant (for call_record: replacing the built-in default). */
  declared: "wire",
  /** The registry's version. */
  version: "u64",
});
export type RegistryGetResult = ReturnType<typeof registryGetResult>;

export const registryListResult = resultFrom<ListTypesResponse>()({
  tenant: "wire",
  version: "u64",
  types: (r) => r.types.map((t) => ({ ...messageTypeResult(t.type!), builtIn: t.builtIn, declared: t.declared })),
});
export type RegistryListResult = ReturnType<typeof registryListResult>;
