import { connect as netConnect, type Socket } from "node:net";
import { connect } from "node:tls";
import { parseHostPort } from "../core/base/index.js";

/**
 * Whether the server hangs up right after a TLS handshake made with this client certificate.
 *
 * Node's TLS server checks a client certificate after the TLS 1.3 handshake and, when it refuses
 * it (another CA, expired, not yet valid), closes the socket without an alert. grpc-js then
 * reports only "Failed to connect" or "read ECONNRESET", which a network fault can produce too.
 * One more handshake that sends nothing tells them apart: a server that accepted the certificate
 * keeps the connection open waiting for the HTTP/2 preface; one that refused it closes at once.
 */
export function serverRefusesCertificate(
  endpoint: string,
  tls: { caPem?: string; certPem: string; keyPem: string },
  waitMs = 1500,
): Promise<boolean> {
  const hp = parseHostPort(endpoint);
  if (!hp) return Promise.resolve(false);
  const host = hp.host;
  return new Promise((resolve) => {
    let handshaken = false;
    let settled = false;
    const done = (refused: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(refused);
    };
    const socket = connect({
      host,
      port: hp.port,
      servername: /^[\d.]+$|:/.test(host) ? undefined : host,
      ...(tls.caPem ? { ca: tls.caPem } : {}),
      cert: tls.certPem,
      key: tls.keyPem,
      ALPNProtocols: ["h2"],
    });
    const timer = setTimeout(() => done(false), waitMs + 3000);
    socket.once("secureConnect", () => {
      handshaken = true;
      clearTimeout(timer);
      setTimeout(() => done(false), waitMs);
    });
    socket.once("error", () => done(handshaken));
    socket.once("close", () => done(handshaken));
  });
}

/** The HTTP/2 client connection preface (RFC 9113 §3.4) and an empty SETTINGS frame: what an h2c client sends first. */
const H2_PREFACE = Buffer.concat([Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1"), Buffer.from([0, 0, 0, 0x04, 0, 0, 0, 0, 0])]);
/** An HTTP/2 frame header is 9 bytes; its type is byte 3; SETTINGS is 0x04 (RFC 9113 §4.1, §6.5). */
const H2_FRAME_HEADER_BYTES = 9;
const H2_SETTINGS = 0x04;

/**
 * What the server at `endpoint` speaks when a client's --insecure does not match it (issue 24):
 * a plaintext client against a TLS server, or the reverse, only ever saw "did not answer" or
 * "cannot reach". One connection tells:
 *
 * - `expect: "tls"` (we connected in plaintext): a TLS handshake without a certificate. A TLS
 *   server completes it (TLS 1.3 checks the client certificate afterwards) or answers with an
 *   alert; a plaintext server answers bytes that are no TLS record.
 * - `expect: "h2c"` (we connected with TLS): the HTTP/2 preface in plaintext. A plaintext gRPC
 *   server (--insecure-dev) answers with its SETTINGS frame; a TLS server cannot parse it.
 *
 * True when the server speaks what `expect` names; false when not, or nothing answers in time.
 */
export function serverSpeaks(endpoint: string, expect: "tls" | "h2c", waitMs = 1500): Promise<boolean> {
  const hp = parseHostPort(endpoint);
  if (!hp) return Promise.resolve(false);
  const host = hp.host;
  return new Promise((resolve) => {
    let settled = false;
    const done = (speaks: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(speaks);
    };
    const timer = setTimeout(() => done(false), waitMs);
    let socket: Socket;
    if (expect === "tls") {
      socket = connect({ host, port: hp.port, servername: /^[\d.]+$|:/.test(host) ? undefined : host, rejectUnauthorized: false, ALPNProtocols: ["h2"] });
      socket.once("secureConnect", () => done(true));
      // an alert is a TLS server's answer (a plaintext peer's bytes fail as "wrong version number" or "packet length too long")
      socket.once("error", (err: Error) => done(/alert/i.test(err.message)));
    } else {
      socket = netConnect({ host, port: hp.port }, () => socket.write(H2_PREFACE));
      let got = Buffer.alloc(0);
      socket.on("data", (chunk: Buffer) => {
        got = Buffer.concat([got, chunk]);
        if (got.length >= H2_FRAME_HEADER_BYTES) done(got[3] === H2_SETTINGS);
      });
      socket.once("error", () => done(false));
    }
    socket.once("close", () => done(false));
  });
}
