import type { Money } from '../../domain/money.js';
import type { DataContext } from '../context.js';
import { mrrMonths, type MrrMovements } from './mrr-history.js';
import type { ReportHeader, ReportRange } from './report-months.js';

export interface MrrByPlan {
  plan_id: string;
  plan_slug: string;
  plan_name: string;
  /** The plan's share of the month-end MRR. */
  mrr: Money;
  /** Subscriptions paying for the plan at the month's end. */
  subscriptions: number;
}

/** `new`, `expansion`, `contraction`, `churned`, `reactivated` and `net_new` (MrrMovements). */
export interface MrrRow extends MrrMovements {
  /** YYYY-MM */
  month: string;
  /** The month has not ended yet: its MRR is what stands now, not the month's final figure. */
  partial: boolean;
  /** MRR at the month's last instant in BILLING_TIMEZONE. */
  mrr: Money;
  /** Plans with MRR at the month's end, in catalogue order (sort_order, then slug). */
  by_plan: MrrByPlan[];
}

export interface MrrReport extends ReportHeader {
  rows: MrrRow[];
}

/** Monthly recurring revenue at each month's end, by plan, and its movements per customer (docs/reports.md, "MRR"). */
export async function mrrReport(ctx: DataContext, range: ReportRange): Promise<MrrReport> {
  const { header, months } = await mrrMonths(ctx, range);
  return {
    ...header,
    rows: months.map(({ month, partial, end, movements: m }) => ({
      month: month.label,
      partial,
      mrr: end.total,
      new: m.new,
      expansion: m.expansion,
      contraction: m.contraction,
      churned: m.churned,
      reactivated: m.reactivated,
      net_new: m.net_new,
      by_plan: [...end.plans.values()]
        .sort((a, b) => a.plan.sortOrder - b.plan.sortOrder || a.plan.slug.localeCompare(b.plan.slug))
        .map((p) => ({ plan_id: p.plan.id, plan_slug: p.plan.slug, plan_name: p.plan.name, mrr: p.mrr, subscriptions: p.subscriptions })),
    })),
  };
}
