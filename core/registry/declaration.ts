import { InvalidArgumentError, MAX_CUSTOM_PAYLOAD_BYTES, PREVIEW_TEMPLATE_MAX_CHARS } from "../base/index.js";

/**
 * A message type's declaration (spec 003 §3, the custom message type registry): the properties the
 * engine decides delivery by without reading the payload (which under E2EE it cannot). Field names
 * are the spec's; a registry file spells them the same (snake_case).
 */
export interface MessageTypeDeclaration {
  /** custom_type: unique within the tenant. */
  customType: string;
  /** schema_version: the payload's schema, for clients; the engine stamps it on each message. */
  schemaVersion: number;
  /** delivery_class. */
  deliveryClass: DeliveryClass;
  /** counts_unread: a message of this type counts toward its readers' unread (spec 002 §3.1). */
  countsUnread: boolean;
  /** affects_session_order: a message of this type moves its conversation in the list. */
  affectsSessionOrder: boolean;
  /** timeline_visible: clients show it in the timeline (carried on each message). */
  timelineVisible: boolean;
  /** anchor_mode. */
  anchorMode: AnchorMode;
  /** preview_template: what a client that does not know the type shows (C-6); a generic placeholder under E2EE. */
  previewTemplate: string;
  /** max_payload_bytes: at most max_custom_payload_bytes (32 KiB). */
  maxPayloadBytes: number;
  /** minimum_client_version: the oldest client that renders the type (clients below it show the preview). */
  minimumClientVersion: string;
}

export const DELIVERY_CLASSES = ["persistent", "ephemeral", "ephemeral_aggregate"] as const;
export type DeliveryClass = (typeof DELIVERY_CLASSES)[number];
export const ANCHOR_MODES = ["own_seq", "anchor_target", "none"] as const;
export type AnchorMode = (typeof ANCHOR_MODES)[number];

/** What a declaration in a registry file may leave out, and what it then gets. */
export const DECLARATION_DEFAULTS: Omit<MessageTypeDeclaration, "customType"> = {
  schemaVersion: 1,
  deliveryClass: "persistent",
  countsUnread: true,
  affectsSessionOrder: true,
  timelineVisible: true,
  anchorMode: "own_seq",
  previewTemplate: "[message]",
  maxPayloadBytes: MAX_CUSTOM_PAYLOAD_BYTES,
  minimumClientVersion: "0.0.0",
};

/** The spec's name of each field, as a registry file and the admin API's JSON spell it. */
export const SPEC_NAMES = {
  customType: "custom_type",
  schemaVersion: "schema_version",
  deliveryClass: "delivery_class",
  countsUnread: "counts_unread",
  affectsSessionOrder: "affects_session_order",
  timelineVisible: "timeline_visible",
  anchorMode: "anchor_mode",
  previewTemplate: "preview_template",
  maxPayloadBytes: "max_payload_bytes",
  minimumClientVersion: "minimum_client_version",
} as const satisfies Record<keyof MessageTypeDeclaration, string>;

const FIELD_BY_SPEC_NAME = new Map<string, keyof MessageTypeDeclaration>(Object.entries(SPEC_NAMES).map(([k, v]) => [v, k as keyof MessageTypeDeclaration]));

/**
 * A custom type's name: lowercase words joined by "." (a namespace, then the type, then usually its
 * major version: `acme.poll.v1`), at most 64 characters. It never holds "/": a content type with one
 * is a MIME type, an ordinary message (`isCustomType`).
 */
export const CUSTOM_TYPE_RE = /^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$/;
export const CUSTOM_TYPE_MAX_CHARS = 64;
const CLIENT_VERSION_RE = /^\d{1,9}(\.\d{1,9}){0,2}([-+][0-9A-Za-z.-]{1,20})?$/;
/** The namespace of the engine's own types: declared in code, never by a tenant. */
export const RESERVED_PREFIX = "qim.";

/**
 * The content types that are ordinary messages, not custom types: MIME types (with a "/") and the
 * client gateway's "text". Every other content type names a custom type and must be declared.
 */
export function isCustomType(contentType: string): boolean {
  return !contentType.includes("/") && contentType !== "text";
}

/**
 * The built-in types (issue 29: declared in the same registry form). `qim.*` are the engine's own
 * CONTROL events: not sendable, not redeclarable. `call_record` (spec 003 §5: a call's record is an
 * ordinary persistent message) is a default a tenant may replace, e.g. to count missed calls as unread.
 */
export const BUILT_IN_TYPES: readonly MessageTypeDeclaration[] = Object.freeze([
  { customType: "qim.membership.v1", ...DECLARATION_DEFAULTS, countsUnread: false, previewTemplate: "[membership changed]" },
  { customType: "qim.group.v1", ...DECLARATION_DEFAULTS, countsUnread: false, previewTemplate: "[group event]" },
  { customType: "qim.recall.v1", ...DECLARATION_DEFAULTS, countsUnread: false, affectsSessionOrder: false, timelineVisible: false, anchorMode: "anchor_target", previewTemplate: "[message recalled]" },
  { customType: "qim.edit.v1", ...DECLARATION_DEFAULTS, countsUnread: false, affectsSessionOrder: false, timelineVisible: false, anchorMode: "anchor_target", previewTemplate: "[message edited]" },
  { customType: "call_record", ...DECLARATION_DEFAULTS, countsUnread: true, previewTemplate: "[call]", maxPayloadBytes: 4096 },
].map((d) => Object.freeze(d as MessageTypeDeclaration)));

/** The built-in types by name. */
export const BUILT_IN_BY_NAME: ReadonlyMap<string, MessageTypeDeclaration> = new Map(BUILT_IN_TYPES.map((d) => [d.customType, d]));

/** What a device shows for a custom type it does not render and the registry does not declare (spec 003 C-6: the generic placeholder). */
export const UNKNOWN_TYPE_PREVIEW = "[unsupported message]";

/**
 * The preview of a message's content type (spec 003 §3 preview_template, C-6): "" for an ordinary
 * message (a MIME type, "text"), the declaration's template for a declared or built-in type, the
 * generic placeholder for a type the snapshot does not hold (deleted since, or no snapshot yet).
 */
export function previewOf(contentType: string, types: ReadonlyMap<string, MessageTypeDeclaration> | null): string {
  if (!isCustomType(contentType)) return "";
  return (types ?? BUILT_IN_BY_NAME).get(contentType)?.previewTemplate ?? UNKNOWN_TYPE_PREVIEW;
}

/** A built-in a tenant may redeclare (its own declaration replaces the default). */
export function isReplaceableBuiltIn(customType: string): boolean {
  return !customType.startsWith(RESERVED_PREFIX) && BUILT_IN_BY_NAME.has(customType);
}

export function parseCustomTypeName(value: unknown, field = "custom_type"): string {
  if (typeof value !== "string" || value.length === 0) throw new InvalidArgumentError(field, `${field} must be a type name such as acme.poll.v1`);
  if (value.length > CUSTOM_TYPE_MAX_CHARS) throw new InvalidArgumentError(field, `${field} is at most ${CUSTOM_TYPE_MAX_CHARS} characters`);
  if (!CUSTOM_TYPE_RE.test(value)) throw new InvalidArgumentError(field, `${field} ${JSON.stringify(value)} must be lowercase words of a-z 0-9 _ joined by "." (e.g. acme.poll.v1); a content type with "/" is a MIME type, not a custom type`);
  return value;
}

function bool(v: unknown, field: string): boolean {
  if (typeof v !== "boolean") throw new InvalidArgumentError(field, `${field} must be true or false`);
  return v;
}

function int(v: unknown, field: string, min: number, max: number): number {
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max) throw new InvalidArgumentError(field, `${field} must be an integer from ${min} to ${max}`);
  return v;
}

function oneOf<T extends string>(v: unknown, field: string, values: readonly T[]): T {
  if (typeof v !== "string" || !(values as readonly string[]).includes(v)) throw new InvalidArgumentError(field, `${field} must be one of ${values.join(", ")}`);
  return v as T;
}

/**
 * One declaration from a registry file or the admin API (an object keyed by the spec's names; the
 * fields left out get DECLARATION_DEFAULTS), checked whole: an unknown field (a typo) is refused
 * by name, and so is a combination the engine cannot honour. `where` names it in errors ("types[2]").
 * Refuses `qim.*` (the engine's own types).
 */
export function parseDeclaration(input: unknown, where: string): MessageTypeDeclaration {
  if (input === null || typeof input !== "object" || Array.isArray(input)) throw new InvalidArgumentError(where, `${where} must be an object of the spec's fields (custom_type, delivery_class, ...)`);
  const o = input as Record<string, unknown>;
  for (const name of Object.keys(o)) {
    if (!FIELD_BY_SPEC_NAME.has(name)) throw new InvalidArgumentError(`${where}.${name}`, `${where}: unknown field ${JSON.stringify(name)}; the fields are ${Object.values(SPEC_NAMES).join(", ")}`);
  }
  const customType = parseCustomTypeName(o.custom_type, `${where}.custom_type`);
  if (customType.startsWith(RESERVED_PREFIX)) throw new InvalidArgumentError(`${where}.custom_type`, `${customType}: the ${RESERVED_PREFIX}* types are the engine's own, declared in code`);
  const get = <K extends keyof MessageTypeDeclaration>(k: K) => (o[SPEC_NAMES[k]] === undefined ? DECLARATION_DEFAULTS[k as Exclude<K, "customType">] : o[SPEC_NAMES[k]]);
  const f = (k: keyof MessageTypeDeclaration) => `${where}.${SPEC_NAMES[k]}`;
  const d: MessageTypeDeclaration = {
    customType,
    schemaVersion: int(get("schemaVersion"), f("schemaVersion"), 1, 2 ** 31 - 1),
    deliveryClass: oneOf(get("deliveryClass"), f("deliveryClass"), DELIVERY_CLASSES),
    countsUnread: bool(get("countsUnread"), f("countsUnread")),
    affectsSessionOrder: bool(get("affectsSessionOrder"), f("affectsSessionOrder")),
    timelineVisible: bool(get("timelineVisible"), f("timelineVisible")),
    anchorMode: oneOf(get("anchorMode"), f("anchorMode"), ANCHOR_MODES),
    previewTemplate: String(get("previewTemplate")),
    maxPayloadBytes: int(get("maxPayloadBytes"), f("maxPayloadBytes"), 1, MAX_CUSTOM_PAYLOAD_BYTES),
    minimumClientVersion: String(get("minimumClientVersion")),
  };
  const preview = get("previewTemplate");
  if (typeof preview !== "string" || preview.length === 0 || preview.length > PREVIEW_TEMPLATE_MAX_CHARS || /[\u0000-\u001f\u007f]/.test(preview)) {
    throw new InvalidArgumentError(f("previewTemplate"), `${f("previewTemplate")} must be 1 to ${PREVIEW_TEMPLATE_MAX_CHARS} characters without control characters`);
  }
  const minVersion = get("minimumClientVersion");
  if (typeof minVersion !== "string" || !CLIENT_VERSION_RE.test(minVersion)) throw new InvalidArgumentError(f("minimumClientVersion"), `${f("minimumClientVersion")} must be a version such as 2.4 or 2.4.1`);
  if (d.deliveryClass !== "persistent") {
    // an ephemeral message has no seq and no mailbox entry (spec 003 §2.1): it cannot count, order or anchor
    const bad = d.countsUnread ? "countsUnread" : d.affectsSessionOrder ? "affectsSessionOrder" : d.anchorMode !== "none" ? "anchorMode" : null;
    if (bad) throw new InvalidArgumentError(f(bad), `${customType}: a ${d.deliveryClass} type is never stored, so counts_unread and affects_session_order must be false and anchor_mode none`);
  } else if (d.anchorMode === "none") {
    throw new InvalidArgumentError(f("anchorMode"), `${customType}: a persistent type has a seq of its own: anchor_mode own_seq (or anchor_target for the built-in recall and edit events)`);
  }
  if (d.anchorMode === "anchor_target") throw new InvalidArgumentError(f("anchorMode"), `${customType}: anchor_target is the built-in recall and edit events' mode (qim.recall.v1, qim.edit.v1)`);
  return d;
}

/** A declaration in its spec-named form (a registry file's, the admin API's JSON): every field, in the spec's order. */
export function declarationToSpec(d: MessageTypeDeclaration): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const [k, name] of Object.entries(SPEC_NAMES)) out[name] = d[k as keyof MessageTypeDeclaration];
  return out;
}

/** The stored form: the spec-named JSON, fields in a fixed order, so equal declarations are equal strings. */
export function encodeDeclaration(d: MessageTypeDeclaration): string {
  return JSON.stringify(declarationToSpec(d));
}

/** A stored declaration (written by encodeDeclaration; checked again: a bad one is an error, never guessed at). */
export function decodeDeclaration(raw: string, customType: string): MessageTypeDeclaration {
  const d = parseDeclaration(JSON.parse(raw), `registry type ${customType}`);
  if (d.customType !== customType) throw new InvalidArgumentError("custom_type", `registry type ${customType} holds the declaration of ${d.customType}`);
  return d;
}

/** The fields two declarations of one type differ in (spec names), for diffs. */
export function changedFields(a: MessageTypeDeclaration, b: MessageTypeDeclaration): string[] {
  return (Object.keys(SPEC_NAMES) as (keyof MessageTypeDeclaration)[]).filter((k) => a[k] !== b[k]).map((k) => SPEC_NAMES[k]);
}
