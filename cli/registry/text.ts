/** Table-mode text of the `registry` commands. */
import { table } from "../format.js";
import type { MessageTypeResult, RegistryApplyResult, RegistryGetResult, RegistryListResult, TypeChangeResult } from "./results.js";

const FIELDS: readonly (keyof MessageTypeResult)[] = [
  "custom_type", "schema_version", "delivery_class", "counts_unread", "affects_session_order", "timeline_visible", "anchor_mode", "preview_template", "max_payload_bytes", "minimum_client_version",
];

function summary(t: MessageTypeResult): string {
  return `${t.delivery_class}, counts_unread ${t.counts_unread}, affects_session_order ${t.affects_session_order}, schema ${t.schema_version}, max ${t.max_payload_bytes} bytes`;
}

function changeLine(c: TypeChangeResult): string[] {
  switch (c.action) {
    case "create": return [`+ ${c.customType}: ${summary(c.after!)}`];
    case "delete": return [`- ${c.customType}`];
    case "unchanged": return [`  ${c.customType} (unchanged)`];
    case "update": return [`~ ${c.customType}`, ...c.fields.map((f) => `    ${f}: ${JSON.stringify(c.before![f as keyof MessageTypeResult])} -> ${JSON.stringify(c.after![f as keyof MessageTypeResult])}`)];
  }
}

/** The diff of a change (apply, diff, delete), then what happened. */
export function applyText(out: RegistryApplyResult, verb: "apply" | "diff"): string {
  const lines = out.changes.flatMap(changeLine);
  const effective = out.changes.filter((c) => c.action !== "unchanged").length;
  if (verb === "diff") {
    lines.push(effective === 0 ? `The registry (version ${out.fromVersion}) already matches: nothing to change` : `${effective} type(s) differ from the registry (version ${out.fromVersion})`);
  } else if (out.dryRun) {
    lines.push(effective === 0 ? `Dry run: nothing would change (registry version ${out.fromVersion})` : `Dry run: would change ${effective} type(s) (registry version ${out.fromVersion} -> ${out.fromVersion + 1}); nothing changed`);
  } else {
    lines.push(out.changed ? `Applied: registry version ${out.fromVersion} -> ${out.version}; every node uses it within the reload interval (1 s)` : `Nothing changed: the registry (version ${out.version}) already holds this`);
  }
  return lines.join("\n");
}

export function getText(out: RegistryGetResult): string {
  const source = out.builtIn ? (out.declared ? "built-in, replaced by the tenant" : "built-in") : "declared by the tenant";
  const width = Math.max(...FIELDS.map((f) => f.length));
  return [...FIELDS.map((f) => `${f.padEnd(width)}  ${String(out.type[f])}`), `${"source".padEnd(width)}  ${source} (registry version ${out.version})`].join("\n");
}

export function listText(out: RegistryListResult): string {
  const rows = out.types.map((t) => [
    t.custom_type, t.delivery_class, t.counts_unread ? "yes" : "no", t.affects_session_order ? "yes" : "no", t.timeline_visible ? "yes" : "no",
    String(t.schema_version), String(t.max_payload_bytes), t.builtIn ? (t.declared ? "built-in (replaced)" : "built-in") : "declared",
  ]);
  return `Registry version ${out.version}\n\n${table(["CUSTOM TYPE", "CLASS", "UNREAD", "ORDER", "TIMELINE", "SCHEMA", "MAX BYTES", "SOURCE"], rows)}`;
}
