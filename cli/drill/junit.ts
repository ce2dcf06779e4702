/** `drill rebuild --junit FILE`: one test case per user checked, one failure per difference. */
import type { JUnitSuite } from "../junit.js";
import type { DrillDifferenceResult, DrillRunResult } from "./results.js";

/** A difference in words: before the wipe is what was expected, after the rebuild what came back. */
function failureOf(d: DrillDifferenceResult): { type: string; message: string; text: string } {
  if (d.field.startsWith("list") || d.field.startsWith("badge")) {
    // the conversation list's check: the definition is what was expected, the cache what was found
    const where = d.conversation === "" ? "badge" : `conversation ${d.conversation}`;
    return {
      type: d.field,
      message: `${where}: ${d.field} expected ${JSON.stringify(d.after)} (definition), cached ${JSON.stringify(d.before)}`,
      text: `tenant ${d.tenant}\nuser ${d.user}\n${where}\nfield ${d.field}\nexpected (the definitional value): ${JSON.stringify(d.after)}\nactual (the conversation list's cache): ${JSON.stringify(d.before)}\nqimctl badge reconcile --user ${d.user} corrects it.`,
    };
  }
  const expected = JSON.stringify(d.before);
  const actual = JSON.stringify(d.after);
  const why = d.field !== "presence" ? ""
    : d.before === true ? "\nThe conversation was in the user's list before the wipe and the rebuild did not bring it back (a registration lost, or a row removed from the authority)."
      : "\nThe rebuild brought back a conversation the user's list did not have before the wipe.";
  return {
    type: d.field,
    message: `conversation ${d.conversation}: ${d.field} expected ${expected}, actual ${actual}`,
    text: `tenant ${d.tenant}\nuser ${d.user}\nconversation ${d.conversation}\nfield ${d.field}\nexpected (before the wipe): ${expected}\nactual (after the rebuild): ${actual}${why}`,
  };
}

export function drillJUnit(r: DrillRunResult, endpoint: string): JUnitSuite {
  const byUser = new Map<string, DrillDifferenceResult[]>();
  for (const d of r.differences) {
    const k = `${d.tenant}|${d.user}`;
    (byUser.get(k) ?? byUser.set(k, []).get(k)!).push(d);
  }
  return {
    name: "qimctl drill rebuild",
    timestamp: r.startedAt,
    time: Math.max(0, (Date.parse(r.finishedAt) - Date.parse(r.startedAt)) / 1000) || 0,
    properties: [
      ["drillId", r.drillId],
      ["wipe", r.wipe],
      ["scope", r.scope],
      ["epochBefore", r.epochBefore],
      ["epochAfter", r.epochAfter],
      ["users", r.users],
      ["usersRebuilt", r.usersRebuilt],
      ["registrationsFlushed", r.registrationsFlushed],
      ["authority", r.authority],
      ["endpoint", endpoint],
      ["reportPath", r.reportPath],
    ],
    cases: r.checkedUsers.map((u) => ({
      classname: `drill-rebuild.${u.tenant}`,
      name: u.user,
      failures: (byUser.get(`${u.tenant}|${u.user}`) ?? []).map(failureOf),
      systemOut: `conversations before ${u.conversationsBefore}, after ${u.conversationsAfter}; ${u.rebuilt ? "rebuilt from the authority" : "not rebuilt"}`,
    })),
  };
}
