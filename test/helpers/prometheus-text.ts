/*
 * A strict reader of the Prometheus text exposition format 0.0.4, so a test sees the metrics as
 * Prometheus would, and fails on any line Prometheus would refuse. (prom-client writes the
 * format but has no parser of its own.)
 */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface MetricFamily {
  name: string;
  type: 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';
  help: string;
  samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

function parseValue(raw: string, line: string): number {
  if (raw === '+Inf') return Infinity;
  if (raw === '-Inf') return -Infinity;
  if (raw === 'NaN') return NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(raw)) throw new Error(`not a number: ${raw} in «${line}»`);
  return Number(raw);
}

function parseLabels(raw: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  let i = 0;
  while (i < raw.length) {
    const eq = raw.indexOf('=', i);
    if (eq < 0) throw new Error(`bad labels in «${line}»`);
    const name = raw.slice(i, eq).trim();
    if (!LABEL.test(name) || name in labels) throw new Error(`bad or repeated label name ${name} in «${line}»`);
    if (raw[eq + 1] !== '"') throw new Error(`label value not quoted in «${line}»`);
    let j = eq + 2;
    let value = '';
    for (; j < raw.length && raw[j] !== '"'; j++) {
      if (raw[j] === '\\') {
        const next = raw[++j];
        if (next === 'n') value += '\n';
        else if (next === '\\' || next === '"') value += next;
        else throw new Error(`bad escape \\${next} in «${line}»`);
      } else value += raw[j];
    }
    if (raw[j] !== '"') throw new Error(`unterminated label value in «${line}»`);
    labels[name] = value;
    i = j + 1;
    if (raw[i] === ',') i++;
    else if (i < raw.length) throw new Error(`expected , between labels in «${line}»`);
  }
  return labels;
}

/** The families of a text exposition; throws on the first line that breaks the format. */
export function parsePrometheusText(text: string): Map<string, MetricFamily> {
  const families = new Map<string, MetricFamily>();
  const family = (name: string) => {
    let f = families.get(name);
    if (!f) families.set(name, (f = { name, type: 'untyped', help: '', samples: [] }));
    return f;
  };
  const owner = (sample: string): MetricFamily | undefined => {
    for (const suffix of ['', '_bucket', '_sum', '_count', '_total']) {
      if (suffix && !sample.endsWith(suffix)) continue;
      const f = families.get(sample.slice(0, sample.length - suffix.length));
      if (f && (suffix === '' || ['histogram', 'summary'].includes(f.type) || (suffix === '_total' && f.type === 'counter'))) return f;
    }
    return undefined;
  };
  if (!text.endsWith('\n')) throw new Error('the exposition must end with a newline');
  for (const line of text.slice(0, -1).split('\n')) {
    if (line === '') continue;
    if (line.startsWith('#')) {
      const m = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
      if (!m) continue; // a plain comment
      const [, kind, name, rest] = m;
      if (!NAME.test(name)) throw new Error(`bad metric name in «${line}»`);
      const f = family(name);
      if (kind === 'TYPE') {
        if (!TYPES.has(rest)) throw new Error(`unknown type in «${line}»`);
        if (f.samples.length > 0) throw new Error(`TYPE after samples in «${line}»`);
        f.type = rest as MetricFamily['type'];
      } else f.help = rest;
      continue;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)( -?\d+)?$/.exec(line);
    if (!m) throw new Error(`not a sample line: «${line}»`);
    const [, name, , rawLabels, rawValue] = m;
    const f = owner(name);
    if (!f) throw new Error(`sample ${name} has no TYPE before it`);
    f.samples.push({ name, labels: rawLabels ? parseLabels(rawLabels, line) : {}, value: parseValue(rawValue, line) });
  }
  for (const f of families.values()) if (f.type === 'histogram') checkHistogram(f);
  return families;
}

/** Buckets rise with `le` up to +Inf, which equals _count, for every label set. */
function checkHistogram(f: MetricFamily): void {
  const series = new Map<string, { le: number; value: number }[]>();
  for (const s of f.samples.filter((x) => x.name === `${f.name}_bucket`)) {
    const { le, ...rest } = s.labels;
    if (le === undefined) throw new Error(`${f.name}_bucket without le`);
    const key = JSON.stringify(rest);
    (series.get(key) ?? series.set(key, []).get(key)!).push({ le: parseValue(le, le), value: s.value });
  }
  for (const [key, buckets] of series) {
    for (let i = 1; i < buckets.length; i++) {
      if (!(buckets[i].le > buckets[i - 1].le) || buckets[i].value < buckets[i - 1].value) throw new Error(`${f.name}${key}: buckets out of order`);
    }
    const count = f.samples.find((s) => s.name === `${f.name}_count` && JSON.stringify(s.labels) === key);
    if (buckets.at(-1)!.le !== Infinity || !count || count.value !== buckets.at(-1)!.value) throw new Error(`${f.name}${key}: +Inf bucket missing or not equal to _count`);
  }
}

/** The sum of the samples of that name whose labels include `labels` (0 when none), e.g. every status of one operation. */
export function sampleValue(families: Map<string, MetricFamily>, sample: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const f of families.values()) {
    for (const s of f.samples) {
      if (s.name === sample && Object.entries(labels).every(([k, v]) => s.labels[k] === v)) sum += s.value;
    }
  }
  return sum;
}
