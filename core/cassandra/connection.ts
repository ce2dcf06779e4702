import type { ConnectionOptions } from "node:tls";
import cassandra from "cassandra-driver";
import { InvalidArgumentError, TLS_VERIFY_CODES, UnavailableError } from "../base/index.js";

/**
 * The engine's Cassandra settings, one set for every table it keeps there (the conversation-set
 * authority, the durable CMD state): contact points, keyspace, consistency, credentials, TLS.
 */
export interface CassandraOptions {
  /** host:port list (QIM_CASSANDRA_CONTACT_POINTS). */
  contactPoints: string[];
  localDataCenter?: string;
  keyspace?: string;
  /** Replication of a keyspace created at start (ignored when it exists). */
  replication?: Record<string, string | number>;
  /** Consistency of reads and writes, e.g. LOCAL_QUORUM (default), QUORUM, ONE. */
  consistency?: string;
  connectTimeoutMs?: number;
  requestTimeoutMs?: number;
  /**
   * The role to log in as (PasswordAuthenticator). Secrets are values here; the settings layer
   * reads the password from a file or the environment, never from the command line.
   */
  credentials?: { username: string; password: string };
  /**
   * TLS to every node (client_encryption_options): the CA that signed the nodes' certificates
   * (default: the system's), a client certificate and key (for require_client_auth), and the name
   * the node certificates must carry (default: the host of each contact point). PEM text. The
   * certificate is always verified.
   */
  tls?: CassandraTls;
  now?: () => number;
}

export interface CassandraTls {
  caPem?: string;
  certPem?: string;
  keyPem?: string;
  servername?: string;
}

const KEYSPACE_RE = /^[a-z][a-z0-9_]{0,47}$/;

/** What cassandraFailureLine needs to know about the connection that failed (never a secret). */
export interface CassandraConnectContext {
  contactPoints: string[];
  /** The role logged in as; undefined when no credentials were given. */
  user?: string;
  tls: boolean;
  /** Whether a client certificate was presented. */
  clientCertificate: boolean;
}

/** The first line of a driver or OpenSSL message, without its stack, at most `max` characters. */
function firstLine(text: string, max = 200): string {
  const line = text.split(/\r?\n/)[0]!.trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** Node's TLS errors carry OpenSSL's reason ("tlsv13 alert certificate required"); other errors their first line. */
function reasonOf(err: Error): string {
  const reason = (err as { reason?: unknown }).reason;
  return firstLine(typeof reason === "string" ? reason : (err.message ?? String(err)));
}

// e.g. ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED, ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE, ERR_SSL_TLSV1_ALERT_INTERNAL_ERROR
const TLS_ALERT_RE = /^ERR_SSL_(?:SSLV3|TLSV1|TLSV13)_ALERT_/;
/**
 * The alerts a node sends about the client's certificate: none given (TLS 1.3 "certificate
 * required", TLS 1.2 "handshake failure" or "bad certificate"), or one it does not accept — Java
 * sends "internal error" when it cannot build the client's chain.
 */
const CLIENT_CERT_ALERT_RE = /_ALERT_(?:CERTIFICATE_REQUIRED|HANDSHAKE_FAILURE|BAD_CERTIFICATE|CERTIFICATE_UNKNOWN|UNKNOWN_CA|CERTIFICATE_EXPIRED|CERTIFICATE_REVOKED|UNSUPPORTED_CERTIFICATE|ACCESS_DENIED|DECRYPT_ERROR|INTERNAL_ERROR)$/;

/**
 * One host's failure as an operator line when it is a refusal (credentials, certificates, a TLS
 * mismatch, a missing permission), or null when it is an outage (refused, timed out, reset on a
 * TLS connection): the kinds retrying does not heal come first.
 */
function refusalLine(err: Error & { code?: string | number }, where: string, ctx: CassandraConnectContext): string | null {
  const code = typeof err.code === "string" ? err.code : undefined;
  if (err instanceof cassandra.errors.AuthenticationError) {
    if (ctx.user === undefined || /requires authentication, but no authenticator/i.test(err.message)) {
      return `Cassandra at ${where} requires authentication and no credentials were given: set the user (--cassandra-user) and the password (--cassandra-password-file or QIM_CASSANDRA_PASSWORD)`;
    }
    return `Cassandra refused the credentials for user ${ctx.user} at ${where} (${firstLine(err.message)})`;
  }
  if (err instanceof cassandra.errors.ResponseError && err.code === cassandra.types.responseErrorCodes.unauthorized) {
    return `Cassandra user ${ctx.user ?? "(anonymous)"} at ${where} lacks a permission the authority needs (${firstLine(err.message)}); see the grants in the operator guide`;
  }
  if (code !== undefined && TLS_VERIFY_CODES.has(code)) {
    const check = code === "ERR_TLS_CERT_ALTNAME_INVALID" ? "check the server name (--cassandra-tls-servername) and the contact point" : "check the CA (--cassandra-tls-ca)";
    return `Cassandra TLS handshake with ${where} failed: the server certificate does not verify (${code}: ${reasonOf(err)}); ${check}`;
  }
  if (code !== undefined && TLS_ALERT_RE.test(code)) {
    const alert = reasonOf(err).replace(/^(?:sslv3|tlsv1|tlsv13) alert /i, "");
    if (!CLIENT_CERT_ALERT_RE.test(code)) {
      return `Cassandra at ${where} ended the TLS handshake (alert: ${alert}): check that both sides share a TLS version and cipher suite`;
    }
    if (code === "ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED" || !ctx.clientCertificate) {
      return `Cassandra at ${where} ended the TLS handshake (alert: ${alert})${ctx.clientCertificate ? "" : " and no client certificate is configured"}: it requires one (require_client_auth); give a certificate and key issued by a CA the node trusts (--cassandra-tls-cert, --cassandra-tls-key)`;
    }
    return `Cassandra at ${where} ended the TLS handshake (alert: ${alert}) after our client certificate: it does not accept it; is it issued by a CA in the node's truststore, and still valid?`;
  }
  if (ctx.tls && (code === "ERR_SSL_WRONG_VERSION_NUMBER" || /wrong version number|packet length too long|unknown protocol/i.test(err.message))) {
    return `Cassandra at ${where} did not answer TLS (${reasonOf(err)}): is it a plaintext port (client encryption off)? drop the TLS settings or use the node's TLS port`;
  }
  if (!ctx.tls && (code === "ECONNRESET" || code === "EPIPE")) {
    return `Cassandra at ${where} closed the connection at the first CQL bytes (${code}): is it a TLS-only port (client_encryption_options enabled, not optional)? configure TLS (--cassandra-tls-ca)`;
  }
  return null;
}

/**
 * A failure of CassandraConnection.open() — the driver's NoHostAvailableError of connect() (each
 * host's own error is in innerErrors), or an error of the statements that follow — as ONE line
 * for the operator, naming the user and host:port but never a secret: refused credentials, no
 * credentials for a node that requires them, a server certificate that does not verify, a client
 * certificate missing or refused, TLS against a plaintext port or the reverse, a missing
 * permission; otherwise "cannot reach Cassandra at …" with the first host's reason. Stack traces,
 * which the driver puts into its messages, are dropped.
 */
export function cassandraFailureLine(err: unknown, ctx: CassandraConnectContext): string {
  const all = ctx.contactPoints.join(",");
  if (!(err instanceof Error)) return `cannot reach Cassandra at ${all}: ${firstLine(String(err))}`;
  if (err instanceof cassandra.errors.NoHostAvailableError) {
    const inner = Object.entries((err.innerErrors ?? {}) as Record<string, Error>);
    for (const [host, e] of inner) {
      const line = refusalLine(e, host, ctx);
      if (line) return line;
    }
    const reasons = inner.slice(0, 3).map(([host, e]) => `${host}: ${reasonOf(e)}`);
    return `cannot reach Cassandra at ${all}: ${reasons.length > 0 ? reasons.join("; ") : firstLine(err.message)}${inner.length > 3 ? `; and ${inner.length - 3} more` : ""}`;
  }
  const coordinator = (err as { coordinator?: string }).coordinator;
  const line = refusalLine(err, coordinator ?? all, ctx);
  if (line) return line;
  if (err instanceof cassandra.errors.ResponseError) return `Cassandra at ${coordinator ?? all} answered an error: ${firstLine(err.message)}`;
  return `cannot reach Cassandra at ${all}: ${reasonOf(err)}`;
}

/** The driver's sslOptions, a tls.connect options object: the node's certificate is always verified. */
function sslOptionsOf(tls: CassandraTls): ConnectionOptions {
  // the driver defaults rejectUnauthorized to false: say true, always
  const out: ConnectionOptions = { rejectUnauthorized: true };
  if (tls.caPem) out.ca = tls.caPem;
  if (tls.certPem) out.cert = tls.certPem;
  if (tls.keyPem) out.key = tls.keyPem;
  if (tls.servername) out.servername = tls.servername;
  return out;
}

/**
 * The Cassandra options of the environment (QIM_CASSANDRA_CONTACT_POINTS, _LOCAL_DC, _KEYSPACE,
 * _CONSISTENCY, _REPLICATION_CLASS, _REPLICATION_FACTOR, _REPLICATION_DC), or null when no contact point is set: the one rule by which a process without
 * explicit settings chooses Cassandra, for the authority and for the durable CMD state alike.
 */
export function cassandraOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): CassandraOptions | null {
  const points = (env.QIM_CASSANDRA_CONTACT_POINTS ?? "").split(",").map((s) => s.trim()).filter(Boolean);
  if (points.length === 0) return null;
  return {
    contactPoints: points,
    ...(env.QIM_CASSANDRA_LOCAL_DC ? { localDataCenter: env.QIM_CASSANDRA_LOCAL_DC } : {}),
    ...(env.QIM_CASSANDRA_KEYSPACE ? { keyspace: env.QIM_CASSANDRA_KEYSPACE } : {}),
    ...(env.QIM_CASSANDRA_CONSISTENCY ? { consistency: env.QIM_CASSANDRA_CONSISTENCY } : {}),
    ...(env.QIM_CASSANDRA_REPLICATION_CLASS || env.QIM_CASSANDRA_REPLICATION_FACTOR
      ? {
        replication: keyspaceReplication({
          ...(env.QIM_CASSANDRA_REPLICATION_CLASS ? { replicationClass: env.QIM_CASSANDRA_REPLICATION_CLASS } : {}),
          ...(env.QIM_CASSANDRA_REPLICATION_FACTOR ? { replicationFactor: Number(env.QIM_CASSANDRA_REPLICATION_FACTOR) } : {}),
          ...(env.QIM_CASSANDRA_REPLICATION_DC || env.QIM_CASSANDRA_LOCAL_DC ? { dataCenter: env.QIM_CASSANDRA_REPLICATION_DC || env.QIM_CASSANDRA_LOCAL_DC } : {}),
        }),
      }
      : {}),
  };
}

/** What every user of the engine's Cassandra settings checks before connecting (InvalidArgumentError). */
export function resolveCassandraOptions(opts: CassandraOptions): { keyspace: string; consistency: number; consistencyName: string } {
  const keyspace = opts.keyspace ?? "qim";
  if (!KEYSPACE_RE.test(keyspace)) throw new InvalidArgumentError("keyspace", `keyspace must match ${KEYSPACE_RE}`);
  if (opts.contactPoints.length === 0) throw new InvalidArgumentError("contactPoints", "at least one Cassandra contact point is needed");
  const consistencyName = (opts.consistency ?? "LOCAL_QUORUM").toUpperCase();
  // LOCAL_QUORUM -> localQuorum, the driver's enum key
  const key = consistencyName.toLowerCase().replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());
  const consistency = (cassandra.types.consistencies as unknown as Record<string, number>)[key];
  if (consistency === undefined) throw new InvalidArgumentError("consistency", `unknown consistency ${opts.consistency} (e.g. LOCAL_QUORUM, QUORUM, ONE)`);
  if (opts.credentials && (typeof opts.credentials.username !== "string" || opts.credentials.username === "" || typeof opts.credentials.password !== "string")) {
    throw new InvalidArgumentError("credentials", "Cassandra credentials need a user name and a password");
  }
  if (opts.tls && (opts.tls.certPem === undefined) !== (opts.tls.keyPem === undefined)) {
    throw new InvalidArgumentError("tls", "a Cassandra client certificate needs its key, and a key its certificate");
  }
  return { keyspace, consistency, consistencyName };
}

/** Runs of one statement that failed with EMPTY_POOL_MESSAGE before it is given up (retryOnEmptyPool). */
export const CASSANDRA_EMPTY_POOL_RETRIES = 3;
/** The wait before the first of those runs, then twice that, three times that (ms). */
export const CASSANDRA_EMPTY_POOL_DELAY_MS = 200;
const EMPTY_POOL_MESSAGE = "No connection available";

/**
 * cassandra-driver 4.10 prepares a statement on the first host of its query plan and gives up on
 * the spot when that host's pool holds no connection yet — a node that just came back, marked up
 * before its pool reconnected — with "No connection available", where its request path goes on to
 * the next host (lib/prepare-handler.js, _prepareWithQueryPlan). The three-node test hit it once in
 * four runs right after the killed node's restart. Nothing was sent then (preparing comes before
 * the request), so the statement is run again, up to CASSANDRA_EMPTY_POOL_RETRIES times: the next
 * plan starts elsewhere, or the pool has connected.
 */
function retryOnEmptyPool(client: cassandra.Client): cassandra.Client {
  const target = client as unknown as Record<"execute" | "batch", (...args: unknown[]) => Promise<unknown>>;
  for (const method of ["execute", "batch"] as const) {
    const original = target[method].bind(client);
    target[method] = async (...args: unknown[]) => {
      for (let attempt = 0; ; attempt++) {
        try {
          return await original(...args);
        } catch (err) {
          const emptyPool = err instanceof Error && err.message === EMPTY_POOL_MESSAGE && !(err as { isSocketError?: boolean }).isSocketError;
          if (!emptyPool || attempt >= CASSANDRA_EMPTY_POOL_RETRIES) throw err;
          await new Promise((r) => setTimeout(r, CASSANDRA_EMPTY_POOL_DELAY_MS * (attempt + 1)));
        }
      }
    };
  }
  return client;
}

/** A driver client of the engine's Cassandra settings (not connected). */
export function newCassandraClient(opts: CassandraOptions, consistency: number): cassandra.Client {
  return retryOnEmptyPool(new cassandra.Client({
    contactPoints: opts.contactPoints,
    localDataCenter: opts.localDataCenter ?? "datacenter1",
    socketOptions: { connectTimeout: opts.connectTimeoutMs ?? 5000, readTimeout: opts.requestTimeoutMs ?? 12000 },
    queryOptions: { consistency, prepare: true },
    // Protocol v4 from the start (the highest this driver speaks to Apache Cassandra): its
    // negotiation begins at DSE v2 and, against a Cassandra 5.0 that requires client
    // certificates, the downgrade crashed the process with an uncaught TypeError
    // ("The server replied with a wrong streamId", StreamIdStack.push).
    protocolOptions: { maxVersion: 4 },
    ...(opts.credentials ? { authProvider: new cassandra.auth.PlainTextAuthProvider(opts.credentials.username, opts.credentials.password) } : {}),
    ...(opts.tls ? { sslOptions: sslOptionsOf(opts.tls) } : {}),
  }));
}

/** The context cassandraFailureLine needs, from the settings (never a secret). */
export function cassandraContextOf(opts: CassandraOptions): CassandraConnectContext {
  return {
    contactPoints: opts.contactPoints,
    ...(opts.credentials ? { user: opts.credentials.username } : {}),
    tls: opts.tls !== undefined,
    clientCertificate: opts.tls?.certPem !== undefined,
  };
}

/** The replication strategies a keyspace the engine creates may use (cassandra.replication_class). */
export const CASSANDRA_REPLICATION_CLASSES = ["SimpleStrategy", "NetworkTopologyStrategy"] as const;
export type CassandraReplicationClass = (typeof CASSANDRA_REPLICATION_CLASSES)[number];
/**
 * Defaults of cassandra.replication_class and cassandra.replication_factor: today's behaviour, one
 * copy, which a single development node needs (with a factor of 3 on one node every LOCAL_QUORUM
 * write fails UNAVAILABLE). A production cluster sets NetworkTopologyStrategy and 3
 * (docs/operator-guide.md, "Cassandra: three nodes and consistency").
 */
export const CASSANDRA_DEFAULT_REPLICATION_CLASS: CassandraReplicationClass = "SimpleStrategy";
export const CASSANDRA_DEFAULT_REPLICATION_FACTOR = 1;
/** The highest replication factor the settings accept (more copies than that is a typo, not a plan). */
export const CASSANDRA_MAX_REPLICATION_FACTOR = 9;
export const CASSANDRA_DEFAULT_LOCAL_DC = "datacenter1";
const DC_RE = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * The replication map of the keyspace from the settings: SimpleStrategy with the factor, or
 * NetworkTopologyStrategy with the factor in one data center (`dc`, default the local one).
 * InvalidArgumentError on an unknown class, a factor out of 1..CASSANDRA_MAX_REPLICATION_FACTOR,
 * or a data center name that is not a plain identifier.
 */
export function keyspaceReplication(o: { replicationClass?: string; replicationFactor?: number; dataCenter?: string }): Record<string, string | number> {
  const cls = o.replicationClass ?? CASSANDRA_DEFAULT_REPLICATION_CLASS;
  if (!(CASSANDRA_REPLICATION_CLASSES as readonly string[]).includes(cls)) {
    throw new InvalidArgumentError("replicationClass", `unknown replication class ${cls} (${CASSANDRA_REPLICATION_CLASSES.join(" or ")})`);
  }
  const rf = o.replicationFactor ?? CASSANDRA_DEFAULT_REPLICATION_FACTOR;
  if (!Number.isInteger(rf) || rf < 1 || rf > CASSANDRA_MAX_REPLICATION_FACTOR) {
    throw new InvalidArgumentError("replicationFactor", `the replication factor must be an integer 1..${CASSANDRA_MAX_REPLICATION_FACTOR}, got ${rf}`);
  }
  if (cls === "SimpleStrategy") return { class: cls, replication_factor: rf };
  const dc = o.dataCenter ?? CASSANDRA_DEFAULT_LOCAL_DC;
  if (!DC_RE.test(dc)) throw new InvalidArgumentError("dataCenter", `data center name ${JSON.stringify(dc)} must match ${DC_RE}`);
  return { class: cls, [dc]: rf };
}

/** `CREATE KEYSPACE IF NOT EXISTS` with the settings' replication (default SimpleStrategy, factor 1). */
export function createKeyspaceCql(keyspace: string, replication: Record<string, string | number> = keyspaceReplication({})): string {
  const repl = Object.entries(replication).map(([k, v]) => `'${k.replace(/'/g, "")}': ${typeof v === "number" ? v : `'${String(v).replace(/'/g, "")}'`}`).join(", ");
  return `CREATE KEYSPACE IF NOT EXISTS ${keyspace} WITH replication = {${repl}}`;
}

/**
 * The engine's one way to reach Cassandra: the settings checked once (resolveCassandraOptions),
 * one driver client, and open(): connect, create the keyspace, then the caller's tables. On any
 * failure open() fails once, with one line (cassandraFailureLine), and shuts its client down
 * first: a client left connected after a failed statement would keep its pools and reconnection
 * timers alive. A later open() starts again on a fresh client; so does one after close().
 */
export class CassandraConnection {
  readonly keyspace: string;
  readonly consistency: number;
  readonly consistencyName: string;
  private current: cassandra.Client;

  constructor(readonly opts: CassandraOptions) {
    const resolved = resolveCassandraOptions(opts);
    this.keyspace = resolved.keyspace;
    this.consistency = resolved.consistency;
    this.consistencyName = resolved.consistencyName;
    this.current = newCassandraClient(opts, this.consistency);
  }

  /** The driver client; a new one after a failed open() or a close(). */
  get client(): cassandra.Client {
    return this.current;
  }

  /** Connects, creates the keyspace with the settings' replication, then runs `schema` (CREATE TABLE IF NOT EXISTS …). */
  async open(schema: (client: cassandra.Client) => Promise<void>): Promise<void> {
    try {
      await this.current.connect();
      await this.current.execute(createKeyspaceCql(this.keyspace, this.opts.replication), [], { prepare: false });
      await schema(this.current);
    } catch (err) {
      await this.close();
      throw new UnavailableError(cassandraFailureLine(err, cassandraContextOf(this.opts)));
    }
  }

  /** Shuts the client down; a later open() starts on a fresh one. */
  async close(): Promise<void> {
    const old = this.current;
    this.current = newCassandraClient(this.opts, this.consistency);
    await old.shutdown().catch(() => {});
  }
}
