import type { Command } from 'commander';
import { churnReport, type ChurnReport } from '../../src/services/reports/churn-report.js';
import { mrrReport, type MrrReport } from '../../src/services/reports/mrr-report.js';
import type { ReportHeader, ReportRange } from '../../src/services/reports/report-months.js';
import { revenueReport, type RevenueReport } from '../../src/services/reports/revenue-report.js';
import type { DataContext } from '../../src/services/context.js';
import { CliFailure, csvOutput, EXIT, globalOptions, output, table, withServices } from '../runtime.js';

interface ReportOptions {
  from: string;
  to: string;
  csv?: boolean;
}

interface Shown {
  /** The rows of the human table and of --csv. */
  rows: Record<string, unknown>[];
  columns: string[];
  /** A second table under the first (MRR by plan), human form only. */
  more?: { title: string; rows: Record<string, unknown>[]; columns: string[] };
}

const REVENUE_COLUMNS = ['month', 'payment_type', 'collected', 'refunded', 'charged_back', 'net'];

function revenueRows(report: RevenueReport): Shown {
  const rows = report.rows.flatMap((r) => [
    { month: r.month, payment_type: 'all', collected: r.collected, refunded: r.refunded, charged_back: r.charged_back, net: r.net },
    ...r.by_method.map((m) => ({ month: r.month, ...m })),
  ]);
  return { rows, columns: REVENUE_COLUMNS };
}

const MRR_COLUMNS = ['month', 'partial', 'mrr', 'new', 'expansion', 'contraction', 'churned', 'reactivated', 'net_new'];
const PLAN_COLUMNS = ['month', 'plan_slug', 'plan_name', 'subscriptions', 'mrr'];

function mrrRows(report: MrrReport): Shown {
  return {
    rows: report.rows.map(({ by_plan: _, ...row }) => row),
    columns: MRR_COLUMNS,
    more: { title: 'By plan at the month end:', rows: report.rows.flatMap((r) => r.by_plan.map((p) => ({ month: r.month, ...p }))), columns: PLAN_COLUMNS },
  };
}

const CHURN_COLUMNS = [
  'month',
  'customers_at_start',
  'customers_churned',
  'logo_churn_rate',
  'mrr_at_start',
  'churned_mrr',
  'contraction_mrr',
  'expansion_mrr',
  'revenue_churn_rate',
  'net_revenue_churn_rate',
];

function churnRows(report: ChurnReport): Shown {
  return { rows: report.rows.map((r) => ({ ...r })), columns: CHURN_COLUMNS };
}

function human(title: string, report: ReportHeader, shown: Shown): string {
  const head = `${title} ${report.from} to ${report.to}, ${report.currency}, months in ${report.timezone} (definitions: docs/reports.md)`;
  const parts = [head, '', table(shown.rows, shown.columns)];
  if (shown.more) parts.push('', shown.more.title, table(shown.more.rows, shown.more.columns));
  return parts.join('\n');
}

function register<R extends ReportHeader>(
  reports: Command,
  name: string,
  description: string,
  title: string,
  run: (ctx: DataContext, range: ReportRange) => Promise<R>,
  show: (report: R) => Shown,
): void {
  reports
    .command(name)
    .description(description)
    .requiredOption('--from <YYYY-MM>', 'the first month (BILLING_TIMEZONE)')
    .requiredOption('--to <YYYY-MM>', 'the last month, included (at most 120 months in all)')
    .option('--csv', 'print CSV: a header row, then the rows of the table')
    .action(async (opts: ReportOptions, cmd: Command) => {
      const json = globalOptions(cmd).json;
      if (json && opts.csv) throw new CliFailure('give at most one of --json and --csv', EXIT.usage);
      const report = await withServices((s) => run(s, { from: opts.from, to: opts.to }));
      const shown = show(report);
      if (opts.csv) return csvOutput(shown.rows, shown.columns);
      output({ json }, report, () => human(title, report, shown));
    });
}

export function registerReportCommands(program: Command): void {
  const reports = program.command('reports').description('revenue, MRR and churn by month in BILLING_TIMEZONE (docs/reports.md); the same figures as GET /admin/reports/…');
  register(reports, 'revenue', "money the gateway collected, refunded and charged back, and net, per month and payment method", 'Revenue', revenueReport, revenueRows);
  register(reports, 'mrr', 'MRR at each month end, by plan, with new, expansion, contraction, churned and reactivated MRR', 'MRR', mrrReport, mrrRows);
  register(reports, 'churn', 'logo churn and gross and net revenue churn per month', 'Churn', churnReport, churnRows);
}
