/**
 * A scrape of a real server's /metrics, read as Prometheus reads the text format: the metric
 * names it exports (every `# TYPE`, with a histogram's _bucket, _sum and _count) and its samples.
 */
export interface Scrape {
  /** Every name a query may use. */
  names: Set<string>;
  /** `name{a="x",b="y"}` (labels sorted; `name` alone without labels) → value. */
  samples: Map<string, number>;
  text: string;
}

export function parseExposition(text: string): Scrape {
  const names = new Set<string>();
  const samples = new Map<string, number>();
  for (const line of text.split("\n")) {
    const type = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (\w+)$/.exec(line);
    if (type) {
      names.add(type[1]!);
      if (type[2] === "histogram") for (const s of ["_bucket", "_sum", "_count"]) names.add(`${type[1]}${s}`);
      continue;
    }
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    names.add(m[1]!);
    const labels = [...(m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map(([, k, v]) => `${k}="${v}"`).sort();
    samples.set(labels.length === 0 ? m[1]! : `${m[1]}{${labels.join(",")}}`, Number(m[3]));
  }
  return { names, samples, text };
}

export async function scrape(url: string): Promise<Scrape> {
  const res = await fetch(url);
  if (res.status !== 200) throw new Error(`GET ${url}: HTTP ${res.status}: ${await res.text()}`);
  return parseExposition(await res.text());
}
