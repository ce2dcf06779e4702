/**
 * Where the engine's keys live. Either N standalone instances (QIM_REDIS_ADDR followed by
 * QIM_MESSAGE_STORE_ADDRS, the same order in every component) or one Redis Cluster, where the
 * `{bNNN}` hash tag does the routing (ADR-0021 §1).
 */
export type TopologyConfig =
  | { kind: "instances"; addrs: string[] }
  | { kind: "cluster"; seeds: string[] };

export interface HostPort {
  host: string;
  port: number;
}

/**
 * `host:port` or `[v6]:port` → host (without brackets) and port, or null when malformed. Port 0
 * ("any free port") only where a socket is to be bound.
 */
export function parseHostPort(addr: string, opts: { allowPortZero?: boolean } = {}): HostPort | null {
  const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(addr.trim());
  if (!m) return null;
  const port = Number(m[2]);
  if (port > 65535 || (port === 0 && !opts.allowPortZero)) return null;
  return { host: m[1]!.replace(/^\[|\]$/g, ""), port };
}

export function parseAddr(addr: string): HostPort {
  const hp = parseHostPort(addr.trim().replace(/^redis:\/\//, ""));
  if (!hp) throw new Error(`invalid Redis address "${addr}": expected host:port with a port from 1 to 65535`);
  return hp;
}

/**
 * Reads the topology from the environment: QIM_REDIS_CLUSTER_SEEDS (comma-separated) selects a
 * cluster; otherwise QIM_REDIS_ADDR + QIM_MESSAGE_STORE_ADDRS (comma-separated) in that order.
 */
export function topologyFromEnv(env: NodeJS.ProcessEnv = process.env): TopologyConfig {
  const split = (v: string | undefined) =>
    (v ?? "").split(",").map((s) => s.trim()).filter((s) => s.length > 0);
  const seeds = split(env.QIM_REDIS_CLUSTER_SEEDS);
  if (seeds.length > 0) {
    seeds.forEach(parseAddr);
    return { kind: "cluster", seeds };
  }
  const addrs = [...split(env.QIM_REDIS_ADDR), ...split(env.QIM_MESSAGE_STORE_ADDRS)];
  if (addrs.length === 0) throw new Error("no Redis configured: set QIM_REDIS_ADDR (and optionally QIM_MESSAGE_STORE_ADDRS) or QIM_REDIS_CLUSTER_SEEDS");
  addrs.forEach(parseAddr);
  return { kind: "instances", addrs };
}
