/**
 * The key space of one engine: every key is `<prefix>:<hash tag>:<name>[:<id>]`. Each module owns
 * its keys and builds them here (conversation/keys.ts, dispatch/keys.ts, projection/keys.ts);
 * docs/architecture.md has the table of every key. The hash tag routes the key (store/).
 */
export class KeySpace {
  constructor(readonly prefix: string = "qim") {}

  /** `<prefix>:<tag>:<name>` followed by `:<id>` when given. */
  key(tag: string, name: string, id?: string): string {
    return id === undefined ? `${this.prefix}:${tag}:${name}` : `${this.prefix}:${tag}:${name}:${id}`;
  }
}
