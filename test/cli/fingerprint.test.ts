/**
 * `qimctl certs fingerprint` (the real bin, files only): the deny-list line it prints is one line
 * that shows what it holds, whatever the certificate's subject carries.
 */
import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { NOT_ONE_LINE } from "../../core/index.js";
import { parseDenyList } from "../../server/deny-list.js";
import { createCa, issueClientCert } from "../../certs/pki.js";
import { ok, run } from "../e2e/qimctl.js";

describe("certs fingerprint", () => {
  let dir: string;
  before(() => { dir = mkdtempSync(path.join(os.tmpdir(), "qim-fingerprint-")); });
  after(() => { if (dir) rmSync(dir, { recursive: true, force: true }); });

  it("a crafted subject (C1 control, line separator, bidirectional override) cannot bend the deny-list comment; JSON keeps the subject as the server reads it", async () => {
    const ca = createCa();
    // issueClientCert refuses C0 controls only; a subject from another tool may carry anything
    const name = "mal\u0085lory\u2028\u202Egnp.exe, x";
    const pair = issueClientCert(ca, { name, role: "operator" });
    const file = path.join(dir, "crafted.crt");
    writeFileSync(file, pair.certPem);
    const fp = new X509Certificate(pair.certPem).fingerprint256;

    const text = await run(["certs", "fingerprint", "--cert", file], { json: false });
    assert.equal(text.code, 0, text.stderr);
    const line = text.stdout.replace(/\n$/, "");
    assert.ok(!NOT_ONE_LINE.test(line), `one line of visible text: ${JSON.stringify(line)}`);
    assert.match(line, new RegExp(`^${fp}  # CN=mal lory  gnp\\.exe, x, OU=operator, expires \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z$`));
    assert.deepEqual([...parseDenyList(text.stdout)], [fp]);

    const json = ok(await run(["certs", "fingerprint", "--cert", file]), "certs fingerprint --output json");
    assert.deepEqual(json.certificates[0].subject, { CN: name, OU: "operator" });
    assert.equal(json.certificates[0].denyListLine, line);
  });

  it("a certificate without an OU (a CA) is named by its CN alone", async () => {
    const ca = createCa({ commonName: "just a CA" });
    const file = path.join(dir, "ca.crt");
    writeFileSync(file, ca.certPem);
    const json = ok(await run(["certs", "fingerprint", "--cert", file]), "certs fingerprint of a CA");
    assert.deepEqual(json.certificates[0].subject, { CN: "just a CA", OU: null });
    assert.match(json.certificates[0].denyListLine, /  # CN=just a CA, expires /);
  });
});
