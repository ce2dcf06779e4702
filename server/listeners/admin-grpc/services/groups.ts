import type { ConversationService } from "../../../../core/index.js";
import { catalogEntry } from "../../../../admin-api/catalog.js";
import type { ChangeMembersRequest } from "../../../../admin-api/gen/qim/admin/v1/groups.js";
import { describeChange, describeDissolve, describeTransfer, dissolutionOut, groupOut, memberOut, membershipOut, ownerTransferOut, userGroupsOut } from "../../../convert.js";
import { VersionConflictError } from "../../../../core/index.js";
import { failpoint, FAILPOINTS } from "../../../../core/support/index.js";
import { ALL_ROLES, defineService, MUTATE, unary } from "../../../pipeline/rpc.js";

/**
 * A request's expect_version as the engine takes it. expect_version takes the whole uint64 range,
 * but a member version grows by one per event and never gets past 2^53−1: such a compare-and-set
 * can only be a conflict (exit 4), reported with the group's version and the expected one in full.
 */
async function expectVersionOf(conversations: ConversationService, req: { tenant: string; group: string; expectVersion?: bigint | undefined }): Promise<{ expectVersion?: number }> {
  if (req.expectVersion === undefined) return {};
  if (req.expectVersion > BigInt(Number.MAX_SAFE_INTEGER)) {
    const g = await conversations.getGroup(req.tenant, req.group);
    throw new VersionConflictError(req.expectVersion, g.version);
  }
  return { expectVersion: Number(req.expectVersion) };
}

/** AddMembers and RemoveMembers alike: the change, the fail point after a commit, the answer and its audit line. */
async function changeMembers(conversations: ConversationService, change: ConversationService["addMembers"], req: ChangeMembersRequest) {
  const r = await change({ tenant: req.tenant, group: req.group, users: req.users, dryRun: req.dryRun, ...await expectVersionOf(conversations, req) });
  if (r.outcome === "committed") failpoint(FAILPOINTS.membershipAfterCommit);
  return { response: membershipOut(r), detail: describeChange(r) };
}

/** GroupService: groups and membership (ADR-0021), each change one CONTROL message. */
export const groupService = defineService(catalogEntry("qim.admin.v1.GroupService"), {
  createGroup: unary({
    roles: MUTATE, mutates: true,
    async handle(req, { deps }) {
      const g = await deps.runtime.conversations.createGroup({ tenant: req.tenant, owner: req.owner, members: req.members, ...(req.group ? { group: req.group } : {}) });
      return { response: groupOut(g), detail: `created group ${g.group} with ${g.memberCount} members` };
    },
  }),
  getGroup: unary({
    roles: ALL_ROLES, mutates: false,
    handle: async (req, { deps }) => ({ response: groupOut(await deps.runtime.conversations.getGroup(req.tenant, req.group)) }),
  }),
  addMembers: unary({ roles: MUTATE, mutates: true, handle: (req, { deps }) => changeMembers(deps.runtime.conversations, (r) => deps.runtime.conversations.addMembers(r), req) }),
  removeMembers: unary({ roles: MUTATE, mutates: true, handle: (req, { deps }) => changeMembers(deps.runtime.conversations, (r) => deps.runtime.conversations.removeMembers(r), req) }),
  transferOwner: unary({
    roles: MUTATE, mutates: true,
    async handle(req, { deps }) {
      const r = await deps.runtime.conversations.transferOwner({
        tenant: req.tenant, group: req.group, to: req.to, dryRun: req.dryRun, ...await expectVersionOf(deps.runtime.conversations, req),
      });
      return { response: ownerTransferOut(r), detail: describeTransfer(r) };
    },
  }),
  dissolveGroup: unary({
    roles: MUTATE, mutates: true,
    async handle(req, { deps }) {
      const r = await deps.runtime.conversations.dissolveGroup({
        tenant: req.tenant, group: req.group, dryRun: req.dryRun, ...await expectVersionOf(deps.runtime.conversations, req),
      });
      return { response: dissolutionOut(r), detail: describeDissolve(r) };
    },
  }),
  listGroups: unary({
    roles: ALL_ROLES, mutates: false,
    async handle(req, { deps }) {
      const page = await deps.runtime.conversations.listGroups({ tenant: req.tenant, owner: req.owner, cursor: req.cursor, ...(req.limit ? { limit: req.limit } : {}) });
      return { response: { groups: page.groups.map(groupOut), nextCursor: page.nextCursor } };
    },
  }),
  listMembers: unary({
    roles: ALL_ROLES, mutates: false,
    async handle(req, { deps }) {
      const r = await deps.runtime.conversations.listMembers({ tenant: req.tenant, group: req.group, cursor: req.cursor, ...(req.limit ? { limit: req.limit } : {}) });
      return { response: { version: BigInt(r.version), members: r.members.map(memberOut), nextCursor: r.nextCursor, memberCount: r.memberCount } };
    },
  }),
  listUserGroups: unary({
    roles: ALL_ROLES, mutates: false,
    async handle(req, { deps }) {
      const page = await deps.runtime.projection.sessions.userGroups({ tenant: req.tenant, user: req.user, ...(req.after ? { after: req.after } : {}), ...(req.limit ? { limit: req.limit } : {}) });
      return { response: userGroupsOut(page) };
    },
  }),
});
