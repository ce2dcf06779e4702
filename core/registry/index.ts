/**
 * The custom message type registry (issue 29, spec 003 §3): per tenant, each type's declaration
 * (delivery class, counts_unread, affects_session_order, timeline_visible, anchor mode, preview,
 * payload limit, minimum client version), versioned, applied by the send path without reading
 * payloads, hot-reloaded on every node within registry_reload_interval. Owns the `typereg` key
 * on the tenant's `{bNNN}` tag and lua/registry/. docs/operator-guide.md "Message types".
 */
export {
  ANCHOR_MODES, BUILT_IN_BY_NAME, BUILT_IN_TYPES, changedFields, CUSTOM_TYPE_MAX_CHARS, DECLARATION_DEFAULTS, declarationToSpec, DELIVERY_CLASSES, isCustomType, isReplaceableBuiltIn,
  parseCustomTypeName, parseDeclaration, previewOf, RESERVED_PREFIX, SPEC_NAMES, UNKNOWN_TYPE_PREVIEW, type AnchorMode, type DeliveryClass, type MessageTypeDeclaration,
} from "./declaration.js";
export { registryKeys, type RegistryKeys } from "./keys.js";
export { registryMetrics } from "./metrics.js";
export {
  checkChangeSize, MessageTypeRegistry, RegistryVersionConflictError, type MessageTypeRegistryOptions, type RegistryChangeRequest, type RegistryChangeResult, type RegistrySnapshot, type TypeChange,
} from "./registry.js";
