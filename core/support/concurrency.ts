/**
 * Bounds on work in flight: a limiter shared by callers that arrive over time, and a pool over a
 * list known at once.
 */

/** At most `limit` calls of run() in flight; the others wait in arrival order. */
export class Limiter {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly limit: number) {}

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.active++;
    try {
      return await work();
    } finally {
      // the slot passes straight to the next waiter (active stays), else it is freed
      const next = this.waiting.shift();
      if (next) next(); else this.active--;
    }
  }

  /** Calls running now. */
  get running(): number {
    return this.active;
  }
}

/** Runs `work` over `items`, at most `limit` at once; rejects with the first failure once all settled. */
export async function eachLimited<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: { err: unknown } | null = null;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++]!;
      try {
        await work(item);
      } catch (err) {
        failure ??= { err };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failure) throw (failure as { err: unknown }).err;
}
