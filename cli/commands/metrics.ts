import type { Command } from 'commander';
import { serializeMetric } from '../../src/http/metric-serializers.js';
import { cliActor } from '../../src/services/audit/actor.js';
import { findMetric } from '../../src/services/usage/find-metric.js';
import { archiveMetric, createMetric, listMetrics } from '../../src/services/usage/manage-metrics.js';
import { withReason } from '../audit-trail.js';
import { describeRecord } from '../lookups.js';
import { CliFailure, EXIT, globalOptions, output, table, withServices } from '../runtime.js';
import { activeFilter, collect, pageOptions } from './coupon-options.js';

/*
 * `billing-admin metrics …`: the staff API's /admin/metrics/ from the command line, the same
 * use cases, recorded in the audit trail with the operator as actor (docs/staff.md, docs/usage.md).
 */

type MetricWire = ReturnType<typeof serializeMetric>;

/** Filters as `key=a|b`, keys sorted (PostgreSQL's jsonb keeps its own order of keys). */
const filtersText = (f: MetricWire['filters']) => (f ? Object.keys(f).sort().map((k) => `${k}=${f[k].join('|')}`).join(' ') : '');

const metricRow = (m: MetricWire) => ({
  code: m.code,
  name: m.name,
  aggregation: m.aggregation,
  field: m.field ?? '',
  filters: filtersText(m.filters),
  status: m.archived_at ? `archived ${m.archived_at}` : 'active',
});

/** Repeated `--filter key=value` as the API's filters: { key: [values] }. */
function filtersOption(given: string[] | undefined): Record<string, string[]> | undefined {
  if (!given) return undefined;
  const filters = new Map<string, string[]>();
  for (const item of given) {
    const eq = item.indexOf('=');
    if (eq < 1) throw new CliFailure(`--filter must be property=value, not "${item}"`, EXIT.usage);
    const key = item.slice(0, eq);
    filters.set(key, [...(filters.get(key) ?? []), item.slice(eq + 1)]);
  }
  return Object.fromEntries(filters);
}

interface CreateOptions {
  code: string;
  name: string;
  description?: string;
  aggregation: string;
  field?: string;
  filter?: string[];
  reason: string;
}

export function registerMetricCommands(program: Command): void {
  const metrics = program.command('metrics').description("billable metrics: what plans' usage charges count (named by code or id)");

  withReason(
    metrics
      .command('create')
      .description('make a billable metric; its terms never change (archive it and make another)')
      .requiredOption('--code <code>', 'its unique code, what events send: lowercase letters, digits, _ or - (api_calls)')
      .requiredOption('--name <name>', 'what invoices call it (API calls)')
      .option('--description <text>', 'a longer description')
      .requiredOption('--aggregation <count|sum|max|unique_count|latest>', "how a window's events are counted")
      .option('--field <property>', 'the event property aggregated (every aggregation but count)')
      .option('--filter <property=value>', 'count only events whose property has this value (repeat for more values or properties)', collect),
  ).action(async (opts: CreateOptions, cmd: Command) => {
    const filters = filtersOption(opts.filter);
    const made = await withServices((s) =>
      createMetric(s, cliActor(), {
        code: opts.code,
        name: opts.name,
        description: opts.description,
        aggregation: opts.aggregation,
        field: opts.field,
        filters,
        reason: opts.reason,
      }),
    );
    const shown = serializeMetric(made);
    output(globalOptions(cmd), shown, () => `Created metric ${shown.code} (${shown.id}): ${shown.aggregation}${shown.field ? ` of ${shown.field}` : ''}.`);
  });

  metrics
    .command('list')
    .description('list billable metrics, newest first')
    .option('--active', 'only metrics that take events')
    .option('--archived', 'only archived metrics')
    .option('--page <n>', 'page number', '1')
    .option('--page-size <n>', 'metrics per page (at most 100)', '50')
    .action(async (opts: { active?: boolean; archived?: boolean; page: string; pageSize: string }, cmd: Command) => {
      const page = pageOptions(opts);
      const active = activeFilter(opts.active, opts.archived, '--archived');
      const found = await withServices((s) => listMetrics(s, { active }, page));
      const rows = found.items.map(serializeMetric);
      output(globalOptions(cmd), { count: found.count, results: rows }, () =>
        `${table(rows.map(metricRow), ['code', 'name', 'aggregation', 'field', 'filters', 'status'])}\n${found.count} metric${found.count === 1 ? '' : 's'}`,
      );
    });

  metrics
    .command('show <metric>')
    .description('show a billable metric (code or id)')
    .action(async (ref: string, _opts, cmd: Command) => {
      const shown = serializeMetric(await withServices((s) => findMetric(s, ref)));
      output(globalOptions(cmd), shown, () => describeRecord(shown));
    });

  withReason(metrics.command('archive <metric>').description('archive a metric: it takes no more events (refused while a plan not archived charges it)')).action(
    async (ref: string, opts: { reason: string }, cmd: Command) => {
      const shown = serializeMetric(await withServices((s) => archiveMetric(s, cliActor(), ref, opts.reason)));
      output(globalOptions(cmd), shown, () => `Archived metric ${shown.code} (${shown.id}) at ${shown.archived_at}.`);
    },
  );
}
