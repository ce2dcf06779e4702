/**
 * A registry file (`registry apply|diff -f FILE`, issue 29): YAML or JSON (JSON is YAML), either a
 * list of declarations or `{ types: [ ... ] }`, each keyed by the spec's field names (custom_type,
 * delivery_class, counts_unread, ...; the fields left out get the spec's defaults). The whole file is
 * checked here before anything is sent, with the same rules as the server (core/registry
 * declaration.ts): every bad declaration is reported by its position and type name, and nothing is
 * sent (exit 2).
 */
import { createReadStream } from "node:fs";
import { parseDocument } from "yaml";
import { parseDeclaration, type MessageTypeDeclaration } from "../../core/registry/index.js";
import { REGISTRY_MAX_TYPES } from "../../core/base/index.js";
import { UsageError } from "../exit-codes.js";
import { InputTooLargeError, readInput } from "../bounded-input.js";

/** The largest registry file read: REGISTRY_MAX_TYPES declarations of a few hundred bytes, with room for comments. */
export const REGISTRY_FILE_MAX_BYTES = 1024 * 1024;

/** The declarations of a registry file's text, checked whole (UsageError naming every bad one). */
export function parseRegistryFile(text: string, flag: string): MessageTypeDeclaration[] {
  const doc = parseDocument(text, { prettyErrors: true });
  if (doc.errors.length > 0) throw new UsageError(flag, `not YAML or JSON: ${doc.errors[0]!.message.split("\n")[0]}`);
  const root: unknown = doc.toJS();
  const list = Array.isArray(root) ? root : root !== null && typeof root === "object" && Array.isArray((root as { types?: unknown }).types) ? (root as { types: unknown[] }).types : null;
  if (list === null) throw new UsageError(flag, "a registry file is a list of declarations, or { types: [ ... ] } (docs/operator-guide.md \"Message types\")");
  if (list.length > REGISTRY_MAX_TYPES) throw new UsageError(flag, `${list.length} declarations; a tenant holds at most ${REGISTRY_MAX_TYPES}`);
  const bad: string[] = [];
  const out: MessageTypeDeclaration[] = [];
  const seen = new Set<string>();
  list.forEach((item, i) => {
    const name = item !== null && typeof item === "object" && typeof (item as { custom_type?: unknown }).custom_type === "string" ? ` (${(item as { custom_type: string }).custom_type})` : "";
    try {
      const d = parseDeclaration(item, `types[${i}]`);
      if (seen.has(d.customType)) bad.push(`types[${i}]${name}: declared twice in the file`);
      seen.add(d.customType);
      out.push(d);
    } catch (err) {
      bad.push(`types[${i}]${name}: ${(err as Error).message}`);
    }
  });
  if (bad.length > 0) throw new UsageError(flag, `${bad.length} bad declaration(s), nothing was sent:\n  ${bad.slice(0, 20).join("\n  ")}${bad.length > 20 ? `\n  ... and ${bad.length - 20} more` : ""}`);
  return out;
}

/** Reads FILE (or stdin for "-"), bounded, and parses it. */
export async function readRegistryFile(file: string, flag: string): Promise<MessageTypeDeclaration[]> {
  const source = file === "-" ? process.stdin : createReadStream(file);
  let text: string;
  try {
    text = await readInput(source, { maxBytes: REGISTRY_FILE_MAX_BYTES, maxLineBytes: REGISTRY_FILE_MAX_BYTES });
  } catch (err) {
    if (file !== "-") (source as ReturnType<typeof createReadStream>).destroy();
    if (err instanceof InputTooLargeError) throw new UsageError(flag, `larger than ${REGISTRY_FILE_MAX_BYTES} bytes: not a registry file`);
    throw new UsageError(flag, `cannot read ${file}: ${(err as Error).message}`);
  }
  return parseRegistryFile(text, flag);
}
