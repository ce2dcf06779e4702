/**
 * A drain of a node with device connections (issue 27, `qimctl cluster drain`): every device gets one
 * RECONNECT whose delay is spread over GATEWAY_DRAIN_SPREAD_MS (no reconnect storm), is closed with
 * 1001 once its delay and the grace passed if it stays, and a device that connects while the node
 * drains is told the same. A real node process (a one-node cluster), the `ws` client; the spread is
 * judged from the delays the devices received.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { GATEWAY_DRAIN_SPREAD_MS, GATEWAY_RECONNECT_GRACE_MS } from "../../core/index.js";
import { until } from "../cluster/processes.js";
import { ok, run } from "../e2e/qimctl.js";
import { Device, show, startGatewayNode, type GatewayNode } from "./device.js";

const DEVICES = 30;

describe("a drained node tells its devices to reconnect, spread over the window", { timeout: 180_000 }, () => {
  let node: GatewayNode;
  let context: string;
  let url: string;
  let ca: Buffer;

  before(async () => {
    node = await startGatewayNode("qim-gateway-drain-", (dir) => ["--node-id", "solo", "--data-dir", path.join(dir, "solo"), "--cluster-lease-ttl", "5s", "--cluster-heartbeat-interval", "1s"]);
    ({ context, url, ca } = node);
  });

  after(async () => {
    await node?.stop();
  });

  const connect = async (name: string): Promise<Device> => {
    const { token } = ok(await run(["token", "issue", "--user", randomUUID(), "--device", name, "--ttl", "1h"], { context }), "token issue") as { token: string };
    const d = await Device.open(url, ca, token);
    assert.ok(d instanceof Device, show(d));
    assert.equal((await d.request({ $case: "auth", auth: { deviceId: name, clientVersion: "test" } })).body?.$case, "authOk");
    return d;
  };

  it("one RECONNECT each, delays spread over the window; closed 1001 after delay + grace; a late device is told too", async () => {
    const devices = await Promise.all(Array.from({ length: DEVICES }, (_, i) => connect(`d${i}`)));
    ok(await run(["cluster", "drain", "solo", "--yes"], { context }), "cluster drain");
    await until("every device got its RECONNECT", async () => devices.every((d) => d.pushes("reconnect").length >= 1));
    const delays = devices.map((d) => d.pushes("reconnect")[0]!.reconnect.afterMs);
    assert.ok(devices.every((d) => d.pushes("reconnect").length === 1), "one hint each");
    assert.ok(delays.every((ms) => ms >= 0 && ms < GATEWAY_DRAIN_SPREAD_MS), delays.join(","));
    // 30 delays drawn uniformly from the window: their range covers most of it (all inside one half: p ≈ 2^-28)
    const spread = Math.max(...delays) - Math.min(...delays);
    assert.ok(spread >= GATEWAY_DRAIN_SPREAD_MS / 2, `delays ${delays.sort((a, b) => a - b).join(",")}`);
    // a device that connects now is told as well
    const late = await connect("late");
    await until("the late device got its RECONNECT", async () => late.pushes("reconnect").length === 1);
    // the ones that stayed are closed 1001 once their delay and the grace passed
    for (const d of devices) {
      const c = await d.whenClosed();
      assert.equal(c.code, 1001);
    }
    assert.ok(GATEWAY_RECONNECT_GRACE_MS > 0);
  });
});
