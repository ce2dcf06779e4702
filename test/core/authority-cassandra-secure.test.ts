/**
 * The Cassandra authority against a node set up as production clusters are (issue 15): its own
 * single node with PasswordAuthenticator and CassandraAuthorizer, client encryption required
 * (PEM certificates of certs/pki.ts through PEMBasedSslContextFactory) and client certificates
 * required. The role `qim` logs in with a password, over TLS, presenting a client certificate,
 * and passes the same authority scenarios as the plain shared node. Each misconfiguration fails
 * init() once with one line naming the user and host:port, closes every connection it opened, and
 * no message or log line carries the password.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import type { ConnectionOptions } from "node:tls";
import { after, before, describe, it } from "node:test";
import cassandra from "cassandra-driver";
import { CassandraAuthority, cassandraFailureLine, newUuid, type CassandraConnectContext } from "../../core/index.js";
import { testPki, type TestPki } from "../certs/fixture.js";
import { sharedCassandra, startCassandra, uniqueKeyspace, type CassandraNode } from "../harness/cassandra.js";
import { cassandraAuthorityScenarios, type CassandraConnection } from "./authority-cassandra-scenarios.js";

// Text that cannot occur by chance: any message or log line holding it leaked the secret.
const PASSWORD = `pw-${randomBytes(12).toString("hex")}`;
const WRONG_PASSWORD = `wrong-${randomBytes(12).toString("hex")}`;
const USER = "qim";
/** Has a password but LOGIN = false. */
const USER_NO_LOGIN = "qim_nologin";
/** Logs in, but has no permission at all. */
const USER_NO_GRANTS = "qim_nogrant";
/** ALL PERMISSIONS on a keyspace the operator created, nothing else. */
const USER_KEYSPACE_ONLY = "qim_ksonly";
const PRECREATED_KEYSPACE = uniqueKeyspace("precreated");
/** CREATE ON ALL KEYSPACES, SELECT and MODIFY on a keyspace and table the operator created. */
const USER_OPERATOR_SCHEMA = "qim_opschema";
const OPERATOR_KEYSPACE = uniqueKeyspace("operator");

let pki: TestPki;
let node: CassandraNode;
let startedInMs = 0;

// Everything the tests saw that could carry a secret: error messages, describe(), the stacks'
// log lines, whatever went through console or process warnings.
const seen: string[] = [];
const stackLines: string[] = [];
for (const method of ["log", "info", "warn", "error", "debug"] as const) {
  const original = console[method].bind(console);
  console[method] = (...args: unknown[]) => {
    seen.push(args.map(String).join(" "));
    original(...args);
  };
}
process.on("warning", (w) => seen.push(`${w.name}: ${w.message}`));

before(async () => {
  pki = await testPki();
  const started = Date.now();
  node = await startCassandra({
    auth: true,
    tls: { certPem: pki.server.certPem, keyPem: pki.server.keyPem, caPem: pki.ca.certPem, requireClientAuth: true, probe: pki.admin },
  });
  startedInMs = Date.now() - started;
  const admin = new cassandra.Client(node.clientOptions());
  try {
    for (const role of [USER, USER_NO_LOGIN, USER_NO_GRANTS, USER_KEYSPACE_ONLY, USER_OPERATOR_SCHEMA]) {
      await admin.execute(`CREATE ROLE ${role} WITH PASSWORD = '${PASSWORD}' AND LOGIN = ${role !== USER_NO_LOGIN}`);
    }
    // init() creates its keyspace (IF NOT EXISTS) and the creator gets every permission on it
    await admin.execute(`GRANT CREATE ON ALL KEYSPACES TO ${USER}`);
    await admin.execute(`CREATE KEYSPACE ${PRECREATED_KEYSPACE} WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`);
    await admin.execute(`GRANT ALL PERMISSIONS ON KEYSPACE ${PRECREATED_KEYSPACE} TO ${USER_KEYSPACE_ONLY}`);
  } finally {
    await admin.shutdown();
  }
});

/** How the role `qim` connects: password, the CA of the node's certificate, a client certificate. */
function asQim(): CassandraConnection {
  return {
    contactPoints: [node.contactPoint],
    credentials: { username: USER, password: PASSWORD },
    tls: { caPem: pki.ca.certPem, certPem: pki.drill.certPem, keyPem: pki.drill.keyPem },
  };
}

describe("the secured node", () => {
  it("starts with authentication, TLS and client certificates required; describe() names the user and TLS, never the password", (t) => {
    t.diagnostic(`secured Cassandra ${node.version} ready on ${node.contactPoint} in ${(startedInMs / 1000).toFixed(1)} s`);
    const a = new CassandraAuthority({ ...asQim(), keyspace: "qim" });
    const text = a.describe();
    seen.push(text);
    assert.equal(text, `cassandra ${node.contactPoint} keyspace qim (consistency LOCAL_QUORUM, user qim, TLS with a client certificate)`);
  });
});

cassandraAuthorityScenarios(asQim, stackLines);

// registered after the scenarios' own hook, which closes their authorities first
after(async () => {
  await node?.stop();
});

// ---------------------------------------------------------------------------------------------
// Refusals
// ---------------------------------------------------------------------------------------------

/**
 * A TCP relay to a node that counts the connections the driver opens and knows when all are
 * closed again. A reset on one side is passed on as a reset, so the client sees what it would
 * see without the relay — except on a side already ended: on Node 20, resetAndDestroy() after
 * end() leaves a request that never completes, and the process spins at exit.
 */
interface Relay {
  contactPoint: string;
  accepted(): number;
  /** Resolves once no connection is open (rejects after 20 s, naming how many are). */
  idle(): Promise<void>;
  close(): Promise<void>;
}

async function relayTo(target: string): Promise<Relay> {
  const [host, port] = [target.slice(0, target.lastIndexOf(":")), Number(target.slice(target.lastIndexOf(":") + 1))];
  const open = new Set<net.Socket>();
  let accepted = 0;
  const server = net.createServer((client) => {
    accepted++;
    open.add(client);
    const upstream = net.connect(port, host);
    const passReset = (to: net.Socket) => () => (to.writableEnded ? to.destroy() : to.resetAndDestroy());
    upstream.on("error", passReset(client));
    client.on("error", passReset(upstream));
    client.on("close", () => {
      upstream.destroy();
      open.delete(client);
    });
    // a FIN travels through pipe(): each side's end() follows the other's
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port: relayPort } = server.address() as net.AddressInfo;
  return {
    contactPoint: `127.0.0.1:${relayPort}`,
    accepted: () => accepted,
    idle: async () => {
      for (let waited = 0; open.size > 0; waited += 20) {
        if (waited > 20_000) throw new Error(`${open.size} connection(s) to Cassandra still open after init() failed`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    // server.close() waits for every connection: end those a failing test left open
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const socket of open) socket.destroy();
    }),
  };
}

/** A misconfiguration and the line init() must fail with, given the host:port it connected to. */
interface RefusalCase {
  name: string;
  connection: () => CassandraConnection;
  /** The plaintext shared node instead of the secured one. */
  plaintextNode?: boolean;
  line: (where: string) => string;
}

const CASES: RefusalCase[] = [
  {
    name: "a wrong password",
    connection: () => ({ ...asQim(), credentials: { username: USER, password: WRONG_PASSWORD } }),
    line: (w) => `Cassandra refused the credentials for user qim at ${w} (Provided username qim and/or password are incorrect)`,
  },
  {
    name: "a role that may not log in",
    connection: () => ({ ...asQim(), credentials: { username: USER_NO_LOGIN, password: PASSWORD } }),
    line: (w) => `Cassandra refused the credentials for user qim_nologin at ${w} (qim_nologin is not permitted to log in)`,
  },
  {
    name: "no credentials for a node that requires them",
    connection: () => { const { credentials: _none, ...rest } = asQim(); return rest; },
    line: (w) => `Cassandra at ${w} requires authentication and no credentials were given: set the user (--cassandra-user) and the password (--cassandra-password-file or QIM_CASSANDRA_PASSWORD)`,
  },
  {
    name: "a CA that did not sign the node's certificate",
    connection: () => ({ ...asQim(), tls: { ...asQim().tls, caPem: pki.otherCa.certPem } }),
    line: (w) => `Cassandra TLS handshake with ${w} failed: the server certificate does not verify (UNABLE_TO_VERIFY_LEAF_SIGNATURE: unable to verify the first certificate); check the CA (--cassandra-tls-ca)`,
  },
  {
    name: "a server name the node's certificate does not carry",
    connection: () => ({ ...asQim(), tls: { ...asQim().tls, servername: "cassandra.example" } }),
    line: (w) => `Cassandra TLS handshake with ${w} failed: the server certificate does not verify (ERR_TLS_CERT_ALTNAME_INVALID: Host: cassandra.example. is not in the cert's altnames: DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1); check the server name (--cassandra-tls-servername) and the contact point`,
  },
  {
    name: "no client certificate while the node requires one",
    connection: () => ({ ...asQim(), tls: { caPem: pki.ca.certPem } }),
    line: (w) => `Cassandra at ${w} ended the TLS handshake (alert: certificate required) and no client certificate is configured: it requires one (require_client_auth); give a certificate and key issued by a CA the node trusts (--cassandra-tls-cert, --cassandra-tls-key)`,
  },
  {
    name: "a client certificate of another CA",
    connection: () => ({ ...asQim(), tls: { caPem: pki.ca.certPem, certPem: pki.otherCaAdmin.certPem, keyPem: pki.otherCaAdmin.keyPem } }),
    line: (w) => `Cassandra at ${w} ended the TLS handshake (alert: internal error) after our client certificate: it does not accept it; is it issued by a CA in the node's truststore, and still valid?`,
  },
  {
    name: "plaintext against the TLS-only port",
    connection: () => { const { tls: _none, ...rest } = asQim(); return rest; },
    line: (w) => `Cassandra at ${w} closed the connection at the first CQL bytes (ECONNRESET): is it a TLS-only port (client_encryption_options enabled, not optional)? configure TLS (--cassandra-tls-ca)`,
  },
  {
    name: "TLS against a plaintext port",
    plaintextNode: true,
    connection: () => ({ contactPoints: [], tls: { caPem: pki.ca.certPem } }),
    line: (w) => `Cassandra at ${w} did not answer TLS (wrong version number): is it a plaintext port (client encryption off)? drop the TLS settings or use the node's TLS port`,
  },
  {
    name: "a role without any permission",
    connection: () => ({ ...asQim(), credentials: { username: USER_NO_GRANTS, password: PASSWORD } }),
    line: (w) => `Cassandra user qim_nogrant at ${w} lacks a permission the authority needs (User qim_nogrant has no CREATE permission on <all keyspaces> or any of its parents); see the grants in the operator guide`,
  },
  {
    // CREATE KEYSPACE IF NOT EXISTS is authorised before the existence check: the operator guide says so
    name: "a role with every permission on a keyspace the operator created, but not CREATE ON ALL KEYSPACES",
    connection: () => ({ ...asQim(), credentials: { username: USER_KEYSPACE_ONLY, password: PASSWORD } }),
    line: (w) => `Cassandra user qim_ksonly at ${w} lacks a permission the authority needs (User qim_ksonly has no CREATE permission on <all keyspaces> or any of its parents); see the grants in the operator guide`,
  },
];

/** The node a case connects to: the secured one, or the plain shared one. */
async function targetOf(c: RefusalCase): Promise<string> {
  return c.plaintextNode ? (await sharedCassandra()).contactPoint : node.contactPoint;
}

function keyspaceOf(c: RefusalCase): string {
  return c.name.startsWith("a role with every permission") ? PRECREATED_KEYSPACE : uniqueKeyspace("refused");
}

describe("init() on a misconfiguration: one line, once, nothing left open", () => {
  for (const c of CASES) {
    it(c.name, async () => {
      const relay = await relayTo(await targetOf(c));
      const a = new CassandraAuthority({ ...c.connection(), contactPoints: [relay.contactPoint], keyspace: keyspaceOf(c) });
      try {
        const err = await a.init().then(() => assert.fail("init() resolved"), (e: Error & { code?: string }) => e);
        seen.push(err.message);
        assert.equal(err.code, "UNAVAILABLE");
        assert.equal(err.message, c.line(relay.contactPoint));
        // the client was shut down: every connection it opened is closed, and it opened one per
        // role (control connection, pool), not a retry after each failure
        await relay.idle();
        assert.ok(relay.accepted() <= 2, `${relay.accepted()} connections for one init()`);
      } finally {
        await a.close();
        await relay.close();
      }
    });
  }

  it("a later init() with the same authority still fails the same way (a fresh client, not 'connecting after shutdown')", async () => {
    const a = new CassandraAuthority({ ...asQim(), credentials: { username: USER_NO_GRANTS, password: PASSWORD }, keyspace: uniqueKeyspace("again") });
    try {
      const first = await a.init().then(() => assert.fail("init() resolved"), (e: Error) => e.message);
      const second = await a.init().then(() => assert.fail("init() resolved"), (e: Error) => e.message);
      seen.push(first, second);
      assert.equal(second, first);
      assert.match(first, /lacks a permission/);
    } finally {
      await a.close();
    }
  });
});

// ---------------------------------------------------------------------------------------------
// cassandraFailureLine over the node's own errors
// ---------------------------------------------------------------------------------------------

/** The driver options a connection means, built here independently of the authority. */
function driverOptions(conn: CassandraConnection, contactPoint: string): cassandra.ClientOptions {
  const tls: ConnectionOptions | undefined = conn.tls
    ? { rejectUnauthorized: true, ca: conn.tls.caPem, cert: conn.tls.certPem, key: conn.tls.keyPem, servername: conn.tls.servername }
    : undefined;
  return {
    contactPoints: [contactPoint],
    localDataCenter: "datacenter1",
    protocolOptions: { maxVersion: 4 },
    ...(conn.credentials ? { credentials: conn.credentials } : {}),
    ...(tls ? { sslOptions: Object.fromEntries(Object.entries(tls).filter(([, v]) => v !== undefined)) } : {}),
  };
}

/** What the driver itself throws for the case: at connect(), or at the first statement init() runs. */
async function captureDriverError(c: RefusalCase, contactPoint: string): Promise<Error> {
  const client = new cassandra.Client(driverOptions(c.connection(), contactPoint));
  try {
    await client.connect();
    await client.execute(`CREATE KEYSPACE IF NOT EXISTS ${keyspaceOf(c)} WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`);
  } catch (err) {
    return err as Error;
  } finally {
    await client.shutdown();
  }
  assert.fail(`${c.name}: the driver connected and created the keyspace`);
}

describe("cassandraFailureLine maps the errors the real node gave to the driver", () => {
  for (const c of CASES) {
    it(c.name, async () => {
      const where = await targetOf(c);
      const err = await captureDriverError(c, where);
      const conn = c.connection();
      const ctx: CassandraConnectContext = {
        contactPoints: [where],
        ...(conn.credentials ? { user: conn.credentials.username } : {}),
        tls: conn.tls !== undefined,
        clientCertificate: conn.tls?.certPem !== undefined,
      };
      const line = cassandraFailureLine(err, ctx);
      seen.push(err.message, line);
      assert.equal(line, c.line(where));
    });
  }
});

describe("grants", () => {
  it("a keyspace and table the operator created: CREATE ON ALL KEYSPACES plus SELECT and MODIFY on the keyspace are enough", async () => {
    // the operator (here the superuser) creates them, as the authority's own init() would
    const byOperator = new CassandraAuthority({ ...asQim(), credentials: node.clientOptions().credentials!, keyspace: OPERATOR_KEYSPACE });
    try {
      await byOperator.init();
    } finally {
      await byOperator.close();
    }
    const admin = new cassandra.Client(node.clientOptions());
    try {
      await admin.execute(`GRANT CREATE ON ALL KEYSPACES TO ${USER_OPERATOR_SCHEMA}`);
      await admin.execute(`GRANT SELECT ON KEYSPACE ${OPERATOR_KEYSPACE} TO ${USER_OPERATOR_SCHEMA}`);
      await admin.execute(`GRANT MODIFY ON KEYSPACE ${OPERATOR_KEYSPACE} TO ${USER_OPERATOR_SCHEMA}`);
    } finally {
      await admin.shutdown();
    }
    const a = new CassandraAuthority({ ...asQim(), credentials: { username: USER_OPERATOR_SCHEMA, password: PASSWORD }, keyspace: OPERATOR_KEYSPACE });
    try {
      await a.init();
      const [tenant, user, conversation] = [newUuid(), newUuid(), newUuid()];
      await a.register([{ tenant, user, conversation, kind: "group", firstSeenAt: 1_700_000_000_000 }]);
      assert.deepEqual((await a.conversations(tenant, user)).map((r) => r.conversation), [conversation]);
      await a.remove(tenant, user, [conversation]);
      assert.deepEqual(await a.conversations(tenant, user), []);
    } finally {
      await a.close();
    }
  });
});

describe("secrets", () => {
  it("no error message, describe(), stack log line, console output or the node's own log carries the password", async () => {
    const logs = await Promise.all(["system.log", "stdout.log"].map((f) => readFile(path.join(node.dir, "logs", f), "utf8").catch(() => "")));
    assert.ok(seen.length > CASES.length * 2, `${seen.length} texts collected`);
    for (const secret of [PASSWORD, WRONG_PASSWORD]) {
      for (const text of [...seen, ...stackLines]) assert.ok(!text.includes(secret), `a secret in: ${text.slice(0, 200)}`);
      for (const [i, log] of logs.entries()) assert.ok(!log.includes(secret), `a secret in the node's ${i === 0 ? "system.log" : "stdout.log"}`);
    }
  });
});
