import * as Flags from "@oclif/core/flags";
import { dataDirFlag, DevCommand, secureRedisFlag } from "../../dev/command.js";
import { DEFAULT_DEV_DIR, devUp, MAX_DEV_NODES, stopStartingOnInterrupt, type DevUpResult } from "../../dev/stack.js";
import { upLines } from "../../dev/text.js";

export default class DevUp extends DevCommand<typeof DevUp> {
  static override summary = "Start a private development stack: redis-server, a dev PKI and the admin server, with a context for qimctl.";
  static override description = `Runs everything on this machine with no configuration, under --data-dir (default .qim/dev):

- a private redis-server on a free 127.0.0.1 port (AOF on, appendfsync always; data in <data-dir>/redis, log <data-dir>/redis.log), never a system Redis;
- once: a dev CA, a server certificate for localhost and 127.0.0.1 and an admin client certificate (CN=dev-admin, OU=admin) in <data-dir>/pki (keys 0600);
- the admin server (qim-admin-server) on 127.0.0.1:--port (default a free port) over mTLS, audit log <data-dir>/audit.log, metrics on a free port, log <data-dir>/server.log; dev up waits until it answers the gRPC health check with the admin certificate.

--nodes N starts N admin servers on that one Redis, each a node of one engine cluster: node ids dev-1 … dev-N, each with its own admin API port, node service port (node.listen 127.0.0.1:0, over mTLS with a node certificate <data-dir>/pki/dev-N.crt issued once), metrics port, log (server.log for dev-1, server-N.log) and audit log (audit.log, audit-N.log). The context points at dev-1; every node answers the admin API (qimctl cluster nodes shows each one's share). --cluster-units N=KINDS gives node N only some kinds of units (API nodes and worker nodes, docs/cluster.md "Node roles"); a node without it takes all three, and every kind must be taken by some node. A running stack is reused only with the same --nodes and --cluster-units.

The servers get the settings dev up means and no others: of the caller's QIM_* variables only QIM_CASSANDRA_* reaches them (dev up notes the ones it left out).

When the data dir holds a large AOF, redis-server answers LOADING until it has replayed it: dev up waits as long as it loads (up to 15 minutes), saying "waiting for Redis to load its data (N% loaded, S s so far)" on stderr every 2 s, then goes on.

All run detached (their own process group) and keep running after dev up returns; <data-dir>/dev.json records their pids and ports. dev up writes <data-dir>/context.json (endpoint localhost:P, the CA, the admin certificate and key, a dev tenant generated once and kept) and, when it does not exist or an earlier dev up wrote it, the default context $XDG_CONFIG_HOME/qimctl/context.json, so that the next qimctl command just works.

--secure-redis makes the redis-server production-like: TLS only (no plaintext port; its certificate, <data-dir>/pki/redis.crt, from the dev CA) and an ACL user qim with a random password, the default user off. The password is created once in <data-dir>/redis.password (mode 0600) and kept; redis-server reads its users from <data-dir>/redis.acl (0600, the password's SHA-256 only), never from its command line. The admin server gets --redis rediss://127.0.0.1:P --redis-user qim --redis-password-file <data-dir>/redis.password --redis-tls-ca <data-dir>/pki/ca.crt. dev status and --output json show the user, the TLS port and the password file, never the password. Connect redis-cli with: REDISCLI_AUTH="$(cat <data-dir>/redis.password)" redis-cli --tls --cacert <data-dir>/pki/ca.crt -p P --user qim PING.

The conversation-set authority is Cassandra when QIM_CASSANDRA_CONTACT_POINTS is set (the server reads it and the other QIM_CASSANDRA_* variables), otherwise the Redis-hash development fallback; dev up says which.

Idempotent: when the stack of this data dir is running and answering, it is reused (never a second redis-server) — but only in the Redis mode asked for: dev up --secure-redis on a running plaintext stack, or dev up without it on a running secure one, changes nothing and exits 4 saying to run dev down first (or to add or leave out --secure-redis to reuse it); a stale state (a process gone or not answering) is cleaned up and started afresh. If the server fails to start, the tail of server.log is printed and the redis-server started for it is stopped again.

Exit codes: 0 up (started or reused); 2 redis-server not installed (the install command is printed) or bad flags; 4 --port in use, a stack already running on another port or with the other Redis mode (--secure-redis or not), or another dev up/down busy with the data dir; 5 a process did not answer in time; 1 a process exited during start-up (its log tail is printed).`;
  static override examples = [
    "<%= config.bin %> <%= command.id %>",
    "<%= config.bin %> <%= command.id %> --port 7443 --output json",
    {
      description: "A Redis with TLS and an ACL user, as in production",
      command: "<%= config.bin %> <%= command.id %> --secure-redis",
    },
    {
      description: "Three engine servers (nodes dev-1, dev-2, dev-3) sharing the work on one private Redis",
      command: "<%= config.bin %> <%= command.id %> --nodes 3",
    },
    {
      description: "An API node (dev-1: commits and relays only) beside two worker nodes that take every kind of unit",
      command: "<%= config.bin %> <%= command.id %> --nodes 3 --cluster-units 1=relay",
    },
    {
      description: "Cassandra as the conversation-set authority",
      command: "QIM_CASSANDRA_CONTACT_POINTS=127.0.0.1:9042 <%= config.bin %> <%= command.id %> --data-dir .qim/dev-cassandra",
    },
  ];
  static override flags = {
    "data-dir": dataDirFlag(DEFAULT_DEV_DIR),
    port: Flags.integer({ min: 1, max: 65535, description: "the admin API port on 127.0.0.1 (default: a free one)" }),
    "secure-redis": secureRedisFlag,
    nodes: Flags.integer({ min: 1, max: MAX_DEV_NODES, default: 1, description: `engine servers to start on the stack's Redis, 1 to ${MAX_DEV_NODES}: each a node of one cluster (node ids dev-1 … dev-N) with its own admin, node and metrics ports` }),
    "cluster-units": Flags.string({
      multiple: true,
      helpValue: "N=KINDS",
      description: "the kinds of units node N takes (its cluster.units), KINDS a comma list of relay, partition, slot; repeat for each node that does not take all three. 1=relay makes dev-1 an API node: it commits and relays, and leaves the session projection, the conversation list and CMD state to the others. Every kind must be taken by some node",
    }),
  };

  async run(): Promise<DevUpResult> {
    stopStartingOnInterrupt();
    const r = await devUp({
      dataDir: this.flags["data-dir"],
      ...(this.flags.port !== undefined ? { port: this.flags.port } : {}),
      secureRedis: this.flags["secure-redis"],
      nodes: this.flags.nodes,
      ...(this.flags["cluster-units"] ? { clusterUnits: this.flags["cluster-units"] } : {}),
      progress: (line) => this.note(line),
    });
    this.log(upLines(r, DEFAULT_DEV_DIR));
    return r;
  }
}
