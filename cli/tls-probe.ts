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
