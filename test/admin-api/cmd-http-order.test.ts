/**
 * The CMD sync HTTP transport's own ordering rule (issue 24): requests pipelined on one connection
 * are handled one at a time, each after the previous one was answered. At a local owner the
 * engine's per-user queue (CmdSyncApp) would hide a transport that dispatched them together, but
 * a user owned by another node is served over the node RPC, where calls sent together may arrive
 * in any order; so this test watches the transport alone. The owner is a recorder (no storage
 * here: what is checked is when each call starts and ends), each call taking 30 ms; plain HTTP on
 * loopback (--insecure-dev), one raw socket write of three requests.
 */
import assert from "node:assert/strict";
import { connect } from "node:net";
import { after, before, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { CMD_HTTP_MAX_PIPELINED, startCmdHttpServer, type CmdHttpServer } from "../../server/listeners/app-http/cmd-http.js";
import type { CmdAccess } from "../../server/routing/cmd-router.js";
import { newUuid, type Uuid } from "../../core/index.js";

const CALL_MS = 30;

describe("CMD sync HTTP: one connection's pipelined requests are handled one at a time", { timeout: 30_000 }, () => {
  let server: CmdHttpServer;
  const events: string[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const call = async <T>(what: string, result: T): Promise<T> => {
    events.push(`start ${what}`);
    maxInFlight = Math.max(maxInFlight, ++inFlight);
    await sleep(CALL_MS);
    inFlight--;
    events.push(`end ${what}`);
    return result;
  };
  const names = new Map<Uuid, string>();
  const recorder = {
    sync: (_tenant: Uuid, user: Uuid) => call(`sync ${names.get(user)}`, { messages: [], generation: 1, servedBy: "" }),
    ack: (_tenant: Uuid, user: Uuid) => call(`ack ${names.get(user)}`, { advanced: 0, cleared: 0, warning: null, servedBy: "" }),
  } as unknown as CmdAccess;

  before(async () => {
    server = await startCmdHttpServer({ listen: "127.0.0.1:0", insecureDev: true, tenant: newUuid(), access: () => recorder, audit: async () => {} });
  });
  after(async () => {
    await server?.close();
  });

  it("[sync u1, syncack u1, sync u2] in one write: each call starts after the previous one ended, answers in order", async () => {
    const [u1, u2] = [newUuid(), newUuid()];
    names.set(u1, "u1").set(u2, "u2");
    const req = (p: string, body: object) => {
      const b = JSON.stringify(body);
      return `POST ${p} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(b)}\r\n\r\n${b}`;
    };
    const text = await new Promise<string>((resolve, reject) => {
      const s = connect(server.port, "127.0.0.1", () => {
        s.write(req("/message/sync", { uid: u1 }) + req("/message/syncack", { uid: u1, last_message_seq: 1 }) + req("/message/sync", { uid: u2 }));
      });
      let got = "";
      const done = () => {
        clearTimeout(timer);
        s.destroy();
        resolve(got);
      };
      // the third answer ends the exchange; a stuck server fails the assertions below, not the run
      const timer = setTimeout(done, 10 * CALL_MS * 3);
      s.on("data", (c: Buffer) => {
        got += c.toString("utf8");
        if ((got.match(/HTTP\/1\.1 /g) ?? []).length === 3 && got.endsWith("[]")) done();
      });
      s.on("error", reject);
    });
    assert.deepEqual(events, ["start sync u1", "end sync u1", "start ack u1", "end ack u1", "start sync u2", "end sync u2"]);
    assert.equal(maxInFlight, 1);
    // the answers, in order: [], {"status":200}, []
    const bodies = text.split(/\r\n\r\n/).slice(1).map((b) => b.split("HTTP/1.1")[0]);
    assert.deepEqual(bodies, ["[]", '{"status":200}', "[]"]);
  });

  /** Writes `count` GETs of an unknown path in one write; the 404s read before the server closed (or 5 s passed with the connection open). */
  function pipelineGets(count: number): Promise<{ answers: number; closed: boolean }> {
    return new Promise((resolve) => {
      const s = connect(server.port, "127.0.0.1", () => s.write("GET /nothing HTTP/1.1\r\nHost: localhost\r\n\r\n".repeat(count)));
      let got = "";
      let closed = false;
      const done = () => {
        clearTimeout(timer);
        s.destroy();
        resolve({ answers: (got.match(/HTTP\/1\.1 404 /g) ?? []).length, closed });
      };
      const timer = setTimeout(done, 5000);
      s.on("data", (c: Buffer) => {
        got += c.toString("utf8");
        if ((got.match(/HTTP\/1\.1 404 /g) ?? []).length === count && got.endsWith("}")) done();
      });
      s.on("close", () => {
        closed = true;
        done();
      });
      s.on("error", () => undefined);
    });
  }

  it(`${CMD_HTTP_MAX_PIPELINED} requests pipelined are all answered; ${CMD_HTTP_MAX_PIPELINED * 2} in one write: the connection is cut, not all held`, async () => {
    assert.equal(CMD_HTTP_MAX_PIPELINED, 64);
    assert.deepEqual(await pipelineGets(64), { answers: 64, closed: false });
    const deep = await pipelineGets(128);
    assert.equal(deep.closed, true, "the server closed the connection");
    assert.ok(deep.answers < 128, `answered ${deep.answers} of 128`);
  });
});
