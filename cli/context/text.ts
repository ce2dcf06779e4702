/** Table-mode text of the `context` commands. */
import { subjectText } from "../certs/text.js";
import { keyValues, table } from "../format.js";
import type { CertificateFile, ContextCurrentResult, ContextDeleteResult, ContextListResult, ContextSetResult, ContextShowResult, ContextUseResult, ImportedResult, KeyFile } from "./results.js";

function importedLine(i: ImportedResult | null): string[] {
  return i ? [`  imported ${i.from} as the context "${i.name}" (that file is no longer read)`] : [];
}

export function listText(r: ContextListResult): string {
  const lines: string[] = [];
  if (r.contexts.length === 0) {
    lines.push(r.configExists ? `No contexts in ${r.config}.` : `No contexts yet (${r.config} does not exist).`);
    if (r.legacyFile) lines.push(`Commands read the context file ${r.legacyFile}; the first change (qimctl context set|use, dev up) imports it as the context "default".`);
    else lines.push("Add one with: qimctl context set NAME --endpoint HOST:PORT --ca CA.crt --cert ME.crt --key ME.key --tenant UUID");
  } else {
    lines.push(table(
      ["CURRENT", "NAME", "ENDPOINT", "TENANT", "CERTIFICATE"],
      r.contexts.map((c) => [c.current ? "*" : "", c.name, `${c.endpoint ?? "-"}${c.insecure ? " (insecure)" : ""}`, c.tenant, c.cert]),
    ));
    if (r.current === null) lines.push("", "No context is current: choose one with qimctl context use NAME (or give --context NAME).");
  }
  if (r.envOverride) lines.push("", `QIMCTL_CONTEXT=${r.envOverride} is set: commands use it instead of the current context.`);
  return lines.join("\n");
}

function certText(c: CertificateFile | null): string | null {
  if (!c) return null;
  if (!c.certificate) return `${c.path} (${c.problem})`;
  const s = c.certificate;
  const who = subjectText(s.subject) || "no CN/OU";
  return `${c.path}\n    ${who}${s.issuerCN ? `, issued by ${s.issuerCN}` : ""}; expires ${s.notAfter}${c.problem ? ` (${c.problem})` : ""}\n    SHA-256 ${s.fingerprint256}`;
}

function keyText(k: KeyFile | null): string | null {
  if (!k) return null;
  return `${k.path}${k.mode ? ` (mode ${k.mode})` : ""}${k.problem ? `: ${k.problem}` : ""}`;
}

export function showText(r: ContextShowResult): string {
  const head = r.name !== null
    ? `Context "${r.name}"${r.current ? " (current)" : ""} in ${r.file}${r.selectedBy === "argument" || r.selectedBy === "the current context" ? "" : `, chosen by ${r.selectedBy}`}`
    : `Context file ${r.file}${r.selectedBy === "argument" ? "" : `, chosen by ${r.selectedBy}`}`;
  const lines = [
    head,
    keyValues([
      ["endpoint", `${r.endpoint ?? "-"}${r.insecure ? " (insecure: plaintext, no TLS)" : ""}`],
      ["tenant", r.tenant],
      ...(r.gateway ? [["gateway", r.gateway] as const] : []),
      ["ca", certText(r.ca)],
      ["certificate", certText(r.cert)],
      ["key", keyText(r.key)],
      ...(r.devDataDir ? [["dev stack", r.devDataDir] as const] : []),
    ]).replace(/^/gm, "  "),
  ];
  if (r.cert?.certificate?.role) lines.push(`  role: ${r.cert.certificate.role} (the OU of the certificate: what the server lets this context do)`);
  return lines.join("\n");
}

export function useText(r: ContextUseResult): string {
  const lines = [r.changed ? `Switched to context "${r.current}"${r.previous ? ` (was "${r.previous}")` : ""}.` : `Context "${r.current}" is already the current context; nothing changed.`];
  lines.push(...importedLine(r.imported));
  if (r.envOverride) lines.push(`  note: QIMCTL_CONTEXT=${r.envOverride} is set and takes precedence over the current context in this shell`);
  return lines.join("\n");
}

export function setText(r: ContextSetResult): string {
  const where = `${r.context.current ? " (current)" : ""} in ${r.config}`;
  const lines = [r.created ? `Context "${r.name}" created${where}.` : r.changed ? `Context "${r.name}" updated${where}.` : `Context "${r.name}"${where} already holds these values; nothing changed.`];
  lines.push(...importedLine(r.imported));
  if (!r.context.current) lines.push(`  use it with --context ${r.name}, or make it current: qimctl context use ${r.name}`);
  return lines.join("\n");
}

export function deleteText(r: ContextDeleteResult): string {
  if (!r.deleted) {
    return `No context named "${r.name}" in ${r.config}; nothing deleted (${r.remaining.length > 0 ? `known: ${r.remaining.join(", ")}` : "there are no contexts"}).`;
  }
  const lines = [`Context "${r.name}" deleted from ${r.config}.`];
  if (r.wasCurrent) lines.push(`  it was the current context: now no context is current; choose one with qimctl context use NAME${r.remaining.length > 0 ? ` (${r.remaining.join(", ")})` : ""}`);
  return lines.join("\n");
}

export function currentText(r: ContextCurrentResult): string {
  return [
    r.name !== null ? r.name : `(context file ${r.file})`,
    keyValues([
      ...(r.name !== null ? [["file", r.file] as const] : []),
      ["chosen by", r.selectedBy],
      ["endpoint", `${r.endpoint ?? "-"}${r.insecure ? " (insecure: plaintext, no TLS)" : ""}`],
      ["tenant", r.tenant],
      ["ca", r.ca],
      ["certificate", r.cert],
      ["key", r.key],
    ]).replace(/^/gm, "  "),
  ].join("\n");
}
