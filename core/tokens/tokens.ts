import type { KeySpace } from "../base/index.js";
import type { RedisStore } from "../store/index.js";
import { TokenIssuer } from "./issuer.js";
import { TokenKeyFile, type TokenKeySource } from "./key-set.js";
import { TokenVerifier } from "./verifier.js";

export interface DeviceTokensOptions {
  /** Where the keys come from: a TokenKeyFile (setting `tokens.keys`) or a fixed set (tests, benches). */
  source: TokenKeySource;
  /** The clock, ms since the epoch (tests inject one). */
  now?: () => number;
  /** Verified tokens the verifier keeps (default TOKEN_VERIFY_CACHE_MAX). */
  cacheMax?: number;
}

/** The device tokens of one engine: the issuer (admin API) and the verifier (the gateway), over one key source. */
export class DeviceTokens {
  readonly source: TokenKeySource;
  readonly issuer: TokenIssuer;
  readonly verifier: TokenVerifier;

  constructor(store: RedisStore, keySpace: KeySpace, opts: DeviceTokensOptions) {
    this.source = opts.source;
    const common = { store, keys: keySpace, source: opts.source, ...(opts.now ? { now: opts.now } : {}) };
    this.issuer = new TokenIssuer(common);
    this.verifier = new TokenVerifier({ ...common, ...(opts.cacheMax !== undefined ? { cacheMax: opts.cacheMax } : {}) });
  }

  /** Over a key file (read now: a missing or malformed file is refused here) or a source. */
  static async open(store: RedisStore, keySpace: KeySpace, opts: Omit<DeviceTokensOptions, "source"> & { keys: string | TokenKeySource; log?: (line: string) => void }): Promise<DeviceTokens> {
    const source = typeof opts.keys === "string"
      ? await TokenKeyFile.open(opts.keys, { ...(opts.log ? { log: opts.log } : {}), ...(opts.now ? { now: opts.now } : {}) })
      : opts.keys;
    return new DeviceTokens(store, keySpace, { source, ...(opts.now ? { now: opts.now } : {}), ...(opts.cacheMax !== undefined ? { cacheMax: opts.cacheMax } : {}) });
  }
}
