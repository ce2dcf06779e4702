/**
 * `membership add` and `membership remove`: one flow, two RPCs (ADR-0021 §2). A change prints
 * what it did (event conversation_seq, version, member count); a re-run after it took effect
 * answers duplicate/noop and exits 0; `--dry-run` prints the server's plan (targets after
 * filtering, audience size, idempotency id) and writes nothing; `--expect-version` is a
 * compare-and-set (exit 4 on conflict).
 *
 * Remove is destructive (cli/confirm.ts): without a terminal it needs --yes; on a terminal it first
 * asks the server for the plan, shows it, and commits only that plan — with expect_version pinned
 * to the planned version as the server sent it, so that a change made by someone else while the
 * prompt was open is refused (exit 4) instead of silently widening what was confirmed.
 */
import type { Command } from "@oclif/core/command";
import * as Flags from "@oclif/core/flags";
import type { ChangeMembersRequest, MembershipChange } from "../../admin-api/client.js";
import { ConnectedCommand } from "../base.js";
import { LIMITS, uuid, uuidList } from "../validate.js";
import { membershipChangeResult, type MembershipChangeResult } from "./results.js";
import { describeMembershipChange } from "./text.js";

/**
 * A member version, parsed once into what the request carries (a u64): digits only, at least 1.
 * Refused by oclif's parser as a usage error (exit 2) naming the flag.
 */
const memberVersionFlag = Flags.custom<bigint>({
  async parse(input) {
    if (!/^\d+$/.test(input) || BigInt(input) < 1n || BigInt(input) > 0xffff_ffff_ffff_ffffn) {
      throw new Error(`Expected a member version from 1 to 2^64-1 but received: ${input}`);
    }
    return BigInt(input);
  },
});

export const membershipChangeFlags = {
  group: Flags.string({ char: "g", required: true, description: "the group's UUID" }),
  user: Flags.string({ char: "u", required: true, multiple: true, delimiter: ",", description: `user UUID; repeat the flag or separate with commas (at most ${LIMITS.usersPerChange} distinct)` }),
  "dry-run": Flags.boolean({ description: "print the plan (targets after filtering, audience size, idempotency id) and change nothing" }),
  "expect-version": memberVersionFlag({ description: "compare-and-set: refuse (exit 4) unless the group is at this member version" }),
};

export type MembershipOp = "join" | "remove";

export abstract class MembershipChangeCommand<T extends typeof Command> extends ConnectedCommand<T> {
  protected abstract readonly op: MembershipOp;

  protected async change(): Promise<MembershipChangeResult> {
    const flags = this.flags as unknown as { group: string; user: string[]; "dry-run": boolean; "expect-version"?: bigint };
    const group = uuid("--group", flags.group);
    const users = uuidList("--user", flags.user, LIMITS.usersPerChange);
    const expectVersion = flags["expect-version"];
    const dryRun = flags["dry-run"];
    const tenant = this.tenant();
    const { client } = await this.connect();
    const rpc = (req: ChangeMembersRequest): Promise<MembershipChange> => (this.op === "join" ? client.addMembers(req) : client.removeMembers(req));
    const request: ChangeMembersRequest = { tenant, group, users, dryRun, ...(expectVersion !== undefined ? { expectVersion } : {}) };

    await this.askFirst(async () => {
      const planned = await rpc({ ...request, dryRun: true });
      const plan = membershipChangeResult(group, planned);
      if (plan.changed.length === 0) return undefined;
      request.expectVersion = planned.version;
      return `${describeMembershipChange(plan)}\nRemove ${plan.changed.length} member(s) from group ${group}? [y/N] `;
    });

    const result = membershipChangeResult(group, await rpc(request));
    this.log(describeMembershipChange(result));
    return result;
  }
}
