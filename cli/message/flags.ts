/** Flags shared by `message recall` and `message edit`. */
import * as Flags from "@oclif/core/flags";
import { MODERATION_REASON_MAX_CHARS } from "../../core/base/index.js";
import { UsageError } from "../exit-codes.js";

export const reasonFlag = Flags.string({ char: "r", required: true, description: `why (1 to ${MODERATION_REASON_MAX_CHARS} characters): written to the audit log` });

/** A conversation_seq flag: a decimal integer ≥ 1. */
export function positiveSeq(flag: string, value: string): number {
  if (!/^[1-9]\d{0,15}$/.test(value) || !Number.isSafeInteger(Number(value))) throw new UsageError(flag, `${JSON.stringify(value)} is not a conversation_seq (an integer ≥ 1)`);
  return Number(value);
}
