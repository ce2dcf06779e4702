/** TLS facts shared by the clients of Redis and Cassandra. */

/**
 * Node's error codes for a server certificate that does not verify (wrong CA, name, expiry):
 * a refusal on our side that retrying does not heal, and that the CA or server-name setting fixes.
 */
export const TLS_VERIFY_CODES: ReadonlySet<string> = new Set([
  "SELF_SIGNED_CERT_IN_CHAIN", "DEPTH_ZERO_SELF_SIGNED_CERT", "UNABLE_TO_VERIFY_LEAF_SIGNATURE", "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY", "CERT_HAS_EXPIRED", "CERT_NOT_YET_VALID", "ERR_TLS_CERT_ALTNAME_INVALID", "CERT_SIGNATURE_FAILURE",
  "CERT_UNTRUSTED", "CERT_REJECTED",
]);
