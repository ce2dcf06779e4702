import type { KeySpace } from "../base/index.js";
import type { RedisStore } from "../store/index.js";
import { TokenIssuer } from "./issuer.js";
import { TokenKeyFile, type TokenKeySource } from "./key-set.js";
import { TokenVerifier } from "./verifier.js";

export interface DeviceTokensOptions {
  /** The key file (setting `tokens.keys`), or a source of keys (tests, benches). */
  keys: string | TokenKeySource;
  now?: () => number;
  cacheMax?: number;
  log?: (line: string) => void;
}

/** The device tokens of one engine: the issuer (admin API) and the verifier (the gateway), over one key source. */
export class DeviceTokens {
  private constructor(readonly source: TokenKeySource, readonly issuer: TokenIssuer, readonly verifier: TokenVerifier) {}

  /** Reads the key file (a missing or malformed file is refused here: the node does not start). */
  static async open(store: RedisStore, keySpace: KeySpace, opts: DeviceTokensOptions): Promise<DeviceTokens> {
    const source = typeof opts.keys === "string"
      ? await TokenKeyFile.open(opts.keys, { ...(opts.log ? { log: opts.log } : {}), ...(opts.now ? { now: opts.now } : {}) })
      : opts.keys;
    const common = { store, keys: keySpace, source, ...(opts.now ? { now: opts.now } : {}) };
    return new DeviceTokens(source, new TokenIssuer(common), new TokenVerifier({ ...common, ...(opts.cacheMax !== undefined ? { cacheMax: opts.cacheMax } : {}) }));
  }
}
