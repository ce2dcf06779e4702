/**
 * Where the engine's keys live. Either N standalone instances (QIM_REDIS_ADDR followed by
 * QIM_MESSAGE_STORE_ADDRS, the same order in every component) or one Redis Cluster, where the
 * `{bNNN}` hash tag does the routing (ADR-0021 §1).
 */
export type TopologyConfig =
  | ({ kind: "instances"; addrs: string[] } & RedisConnectionSecurity & RedisAckPolicy)
  | ({ kind: "cluster"; seeds: string[] } & RedisConnectionSecurity & RedisAckPolicy);

/**
 * When an acknowledgement of a write returns (issue 26). Redis replicates asynchronously: a
 * master that dies after a commit script answered and before its replica received the write
 * takes the write with it, and the promoted replica never had it. With `ackReplicas` > 0 the
 * commit script is followed, on the same connection (so on the node that ran it), by
 * `WAIT ackReplicas ackTimeoutMs`; the acknowledgement returns only once that many replicas
 * confirmed, and fails (UNAVAILABLE, retryable: the retry is answered as a duplicate) when they
 * did not in time. Absent or 0: no WAIT (the default).
 */
export interface RedisAckPolicy {
  ack?: { replicas: number; timeoutMs: number };
}

/**
 * How the engine authenticates to every Redis of a topology and protects the connection. The same
 * for each instance (and each Cluster node): one ACL user, one CA. Secrets are values here; the
 * settings layer reads them from files or the environment, never from the command line.
 */
export interface RedisConnectionSecurity {
  /**
   * ACL user and password (Redis 6+ `AUTH user password`); a password without a user is the
   * legacy `requirepass` (`AUTH password`, the `default` user).
   */
  auth?: { username?: string; password: string };
  /**
   * TLS to Redis: the CA that signed the servers' certificates (default: the system's), an
   * optional client certificate and key (for `tls-auth-clients yes`), and the name the server
   * certificate must carry (default: the host of each address).
   */
  tls?: RedisTls;
}

export interface RedisTls {
  caPem?: string;
  certPem?: string;
  keyPem?: string;
  servername?: string;
}

/** The user name the engine authenticates as, for messages ("default" for requirepass). */
export function redisUserOf(s: RedisConnectionSecurity): string {
  return s.auth?.username ?? "default";
}

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
  return parseRedisAddr(addr);
}

/**
 * A Redis address: `host:port`, `redis://host:port`, or `rediss://host:port` (TLS). Credentials in
 * the address are refused (they would show in process listings and logs): the user and password
 * come from settings of their own.
 */
export function parseRedisAddr(addr: string): HostPort & { tls: boolean } {
  const t = addr.trim();
  const scheme = /^(rediss?):\/\//i.exec(t);
  const rest = scheme ? t.slice(scheme[0].length) : t;
  if (rest.includes("@")) {
    throw new Error("a Redis address must not carry credentials (user:password@): give the user with --redis-user and the password in a file (--redis-password-file) or QIM_REDIS_PASSWORD");
  }
  const hp = parseHostPort(rest.replace(/\/$/, ""));
  if (!hp) throw new Error(`invalid Redis address "${addr.slice(0, 80)}": expected host:port (or redis://host:port, rediss://host:port for TLS) with a port from 1 to 65535`);
  return { ...hp, tls: scheme?.[1]!.toLowerCase() === "rediss" };
}

/** The address without its scheme, as messages name it ("host:port"). */
export function redisAddrText(addr: string): string {
  const { host, port } = parseRedisAddr(addr);
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
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
