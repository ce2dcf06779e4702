import { catalogEntry } from "../catalog.js";
import { describeChange, groupOut, memberOut, membershipOut } from "../convert.js";
import { failpoint, FAILPOINTS } from "../../core/support/index.js";
import { ALL_ROLES, defineService, MUTATE, unary } from "../rpc.js";

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
  addMembers: unary({
    roles: MUTATE, mutates: true,
    async handle(req, { deps }) {
      const r = await deps.runtime.conversations.addMembers({ tenant: req.tenant, group: req.group, users: req.users, dryRun: req.dryRun, ...(req.expectVersion !== undefined ? { expectVersion: Number(req.expectVersion) } : {}) });
      if (r.outcome === "committed") failpoint(FAILPOINTS.membershipAfterCommit);
      return { response: membershipOut(r), detail: describeChange(r) };
    },
  }),
  removeMembers: unary({
    roles: MUTATE, mutates: true,
    async handle(req, { deps }) {
      const r = await deps.runtime.conversations.removeMembers({ tenant: req.tenant, group: req.group, users: req.users, dryRun: req.dryRun, ...(req.expectVersion !== undefined ? { expectVersion: Number(req.expectVersion) } : {}) });
      if (r.outcome === "committed") failpoint(FAILPOINTS.membershipAfterCommit);
      return { response: membershipOut(r), detail: describeChange(r) };
    },
  }),
  listMembers: unary({
    roles: ALL_ROLES, mutates: false,
    async handle(req, { deps }) {
      const r = await deps.runtime.conversations.listMembers({ tenant: req.tenant, group: req.group });
      return { response: { version: BigInt(r.version), members: r.members.map(memberOut) } };
    },
  }),
});
