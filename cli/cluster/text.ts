/** Table-mode text of the `cluster` commands. */
import { formatDuration, table } from "../format.js";
import { UNIT_KINDS, type DrainResult, type NodesResult, type OwnerResult, type UndrainResult } from "./results.js";

export function nodesText(out: NodesResult): string {
  if (out.nodes.length === 0) return "No nodes registered.";
  return table(
    ["NODE", "ADDRESS", "VERSION", "STARTED", "HEARTBEAT", "STATE", "UNITS", "RELAY BUCKETS", "PARTITIONS", "SLOTS", "ROOMS", "DEVICES"],
    out.nodes.map((n) => [
      n.nodeId + (n.nodeId === out.answeredBy ? " *" : ""), n.address, n.version, new Date(n.startedAtMs).toISOString(), `${formatDuration(n.heartbeatAgeMs)} ago`,
      !n.alive ? "DEAD" : n.draining ? "draining" : "alive", n.units.length === UNIT_KINDS.length ? "all" : n.units.join(","), n.owned.relayBuckets, n.owned.partitions, n.owned.slots, n.owned.rooms,
      n.connections ?? "-",
    ]),
  ) + "\n(* the node that answered)"
    + UNIT_KINDS.filter((k) => !out.nodes.some((n) => n.alive && !n.draining && n.units.includes(k)))
      .map((k) => `\nwarning: no live node takes ${k} units: their work waits until one does (cluster.units; docs/cluster.md "Node roles")`).join("")
    + out.nodes.filter((n) => n.cmdBadFile).map((n) => `\nwarning: node ${n.nodeId}: its CMD pending file did not decode at start-up and was renamed ${n.cmdBadFile} (see docs/cmd-sync.md ".bad")`).join("");
}

const unitName = (o: OwnerResult) => (o.kind === "relay" ? `relay bucket ${o.unit}` : o.kind === "partition" ? `partition ${o.unit}` : o.kind === "slot" ? `slot ${o.unit}` : `room unit ${o.unit}`);

export function ownerText(out: OwnerResult): string {
  const what = out.user ? `user ${out.user.user} (${unitName(out)})` : unitName(out);
  if (out.nodeId === null) return `${what} has no live owner right now (its lease is being taken over; last token ${out.token})`;
  return `${what} is owned by node ${out.nodeId} at ${out.address ?? "(no address)"}, token ${out.token}${out.alive ? "" : " (its lease has expired)"}`;
}

export function drainText(out: DrainResult): string {
  const h = out.handedOver;
  return out.changed
    ? `Node ${out.nodeId} drained: ${h.relayBuckets} relay bucket(s), ${h.partitions} partition(s), ${h.slots} slot(s), ${h.rooms} room unit(s) handed over; it takes no new units until it restarts`
    : `Node ${out.nodeId} is draining already; nothing changed`;
}

export function undrainText(out: UndrainResult): string {
  return out.changed
    ? `Node ${out.nodeId} undrained: it takes its share of units again at the next heartbeats (qimctl cluster nodes shows it)`
    : `Node ${out.nodeId} is not draining; nothing changed`;
}
