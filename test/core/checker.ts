import { decodeHistoryEntry, type DispatchRecord, type Uuid } from "../../core/index.js";

export interface CheckReport {
  messages: number;
  events: number;
  violations: string[];
}

const sameSet = (a: Iterable<Uuid>, b: Iterable<Uuid>) => {
  const x = [...new Set(a)].sort();
  const y = [...new Set(b)].sort();
  return x.length === y.length && x.every((v, i) => v === y[i]);
};

/**
 * Replays one conversation's dispatch records in conversation_seq order from its initial members
 * and checks ADR-0021's invariants: seqs 1..N with no gap and no duplicate; every membership event
 * bumps the version by exactly one; a message's audience equals the member set at the moment its
 * seq was allocated; a control message's audience is post-change members ∪ affected (or only the
 * affected users above the broadcast threshold).
 *
 * A seq dispatched by a fanout job (issue 22) has several records, chunks 0, 1, 2 …: its audience
 * is the union of their recipients, and they must agree on everything else (entry, version). The
 * same chunk twice is a duplicate (callers dedupe at-least-once repeats first).
 */
export function checkConversation(initialMembers: Uuid[], records: DispatchRecord[], broadcastMax = 500): CheckReport {
  const violations: string[] = [];
  const bySeq = new Map<number, DispatchRecord>();
  const chunks = new Set<string>();
  for (const r of records) {
    const chunk = `${r.conversationSeq}|${r.chunk}`;
    if (chunks.has(chunk)) violations.push(`seq ${r.conversationSeq} chunk ${r.chunk} dispatched twice`);
    chunks.add(chunk);
    const first = bySeq.get(r.conversationSeq);
    if (!first) {
      bySeq.set(r.conversationSeq, { ...r, recipients: [...r.recipients] });
      continue;
    }
    if (first.entry !== r.entry || first.version !== r.version) violations.push(`seq ${r.conversationSeq}: its chunks differ in entry or version`);
    first.recipients.push(...r.recipients);
  }
  const seqs = [...bySeq.keys()].sort((a, b) => a - b);
  seqs.forEach((s, i) => { if (s !== i + 1) violations.push(`seq gap: expected ${i + 1}, found ${s}`); });
  const members = new Set(initialMembers);
  let version = 1;
  let messages = 0;
  let events = 0;
  for (const s of seqs) {
    const r = bySeq.get(s)!;
    const rec = decodeHistoryEntry(r.entry);
    if (rec.conversationSeq !== s) violations.push(`seq ${s}: entry says ${rec.conversationSeq}`);
    if (rec.membership) {
      events++;
      const affected = rec.membership.users;
      for (const u of affected) {
        if (rec.membership.op === 1) {
          if (members.has(u)) violations.push(`seq ${s}: join of ${u} who is already a member`);
          members.add(u);
        } else {
          if (!members.has(u)) violations.push(`seq ${s}: ${rec.membership.op === 2 ? "leave" : "remove"} of non-member ${u}`);
          members.delete(u);
        }
      }
      version++;
      if (r.version !== version) violations.push(`seq ${s}: event version ${r.version}, expected ${version}`);
      const expected = members.size <= broadcastMax ? [...members, ...affected] : affected;
      if (!sameSet(r.recipients, expected)) violations.push(`seq ${s}: control audience ${r.recipients.length} users differs from expected ${new Set(expected).size}`);
    } else {
      messages++;
      if (r.version !== version) violations.push(`seq ${s}: frozen at version ${r.version}, member version was ${version}`);
      if (!sameSet(r.recipients, members)) violations.push(`seq ${s}: audience of ${r.recipients.length} differs from the ${members.size} members at its seq`);
      if (!members.has(rec.senderId)) violations.push(`seq ${s}: sender ${rec.senderId} was not a member`);
    }
  }
  return { messages, events, violations };
}
