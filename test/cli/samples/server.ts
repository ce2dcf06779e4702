/** Contract samples of `server start` (test/cli/result-samples.ts). */
import type ServerConfig from "../../../cli/commands/server/config.js";
import type ServerStart from "../../../cli/commands/server/start.js";
import { freeForm, keyedByData, samplesOf, type ResultOf } from "../result-samples.js";

export const samples = {
  "server start": samplesOf<ResultOf<typeof ServerStart>>(
    { listen: "127.0.0.1:7443", port: 7443, metricsPort: 9464, tls: true, auditLog: "/var/lib/qim/audit.log" },
    { listen: "127.0.0.1:7443", port: 7443, metricsPort: null, tls: false, auditLog: "/var/lib/qim/audit.log" },
  ),
  "server config": samplesOf<ResultOf<typeof ServerConfig>>(
    {
      config: "/etc/qim/server.yaml",
      // nested as in the config file: which keys appear depends on the settings
      settings: freeForm({ listen: "0.0.0.0:7443", redis: { addrs: ["rediss://10.0.0.5:6380"], user: "qim", password: "<redacted>" } }),
      sources: keyedByData({ listen: "file", "redis.addrs": "file", "redis.user": "file", "redis.password": "env" }),
      missing: [],
    },
    {
      config: null,
      settings: freeForm({ listen: "0.0.0.0:7443", insecure_dev: false }),
      sources: keyedByData({ listen: "default", insecure_dev: "default" }),
      missing: [{ key: "redis.addrs", flag: "--redis", env: ["QIM_REDIS_ADDR", "QIM_MESSAGE_STORE_ADDRS"], message: "--redis: no Redis configured: give --redis host:port (or redis.addrs in the config file, or QIM_REDIS_ADDR), or --redis-cluster seeds" }],
    },
  ),
};
