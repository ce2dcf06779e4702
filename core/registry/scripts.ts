import { InternalError } from "../base/index.js";
import { defineScript, luaStatus } from "../lua/index.js";

/** The registry's scripts (lua/registry/), each declared once. */

export type ApplyTypesReply =
  | { status: "OK"; version: number; changed: boolean; types: number }
  | { status: "REGISTRY_VERSION_MOVED"; version: number }
  | { status: "REGISTRY_FULL"; types: number };

export const applyTypesScript = defineScript({
  name: "applyTypes",
  keys: ["typereg"],
  /** `changes`: custom_type → declaration, "" to delete. */
  args: (a: { expectVersion: number | null; max: number; changes: readonly (readonly [string, string])[] }) => [
    a.expectVersion === null ? "" : a.expectVersion, a.max, ...a.changes.flat(),
  ],
  reply: (r): ApplyTypesReply => {
    const status = luaStatus(r);
    if (status === "OK") return { status, version: Number(r[1]), changed: Number(r[2]) === 1, types: Number(r[3]) };
    if (status === "REGISTRY_VERSION_MOVED") return { status, version: Number(r[1]) };
    if (status === "REGISTRY_FULL") return { status, types: Number(r[1]) };
    throw new InternalError(`applyTypes: unexpected status ${status}`);
  },
});
