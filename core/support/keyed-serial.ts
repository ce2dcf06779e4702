/**
 * One queue per key: an operation of a key starts only after the previous operation of the same
 * key has settled (resolved or rejected); operations of different keys run concurrently. A key's
 * entry is dropped once its queue is empty, so the map holds only keys with work in flight.
 */
export class KeyedSerial {
  private readonly tails = new Map<string, Promise<void>>();

  run<T>(key: string, op: () => Promise<T>): Promise<T> {
    const before = this.tails.get(key) ?? Promise.resolve();
    const result = before.then(op);
    const tail = result.then(() => undefined, () => undefined);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }

  /** Keys with an operation in flight or queued. */
  size(): number {
    return this.tails.size;
  }
}
