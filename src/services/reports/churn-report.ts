import { add, subtract, type Money } from '../../domain/money.js';
import type { DataContext } from '../context.js';
import { mrrMonths } from './mrr-history.js';
import { percent, type ReportHeader, type ReportRange } from './report-months.js';

export interface ChurnRow {
  /** YYYY-MM */
  month: string;
  /** Customers paying at the previous month's end. */
  customers_at_start: number;
  /** Of those, customers paying nothing at this month's end. */
  customers_churned: number;
  /** customers_churned / customers_at_start, percent with two places; null when no customer was paying. */
  logo_churn_rate: string | null;
  /** The MRR at the previous month's end (the MRR report's previous row). */
  mrr_at_start: Money;
  churned_mrr: Money;
  contraction_mrr: Money;
  expansion_mrr: Money;
  /** Gross revenue churn: (churned + contraction) / mrr_at_start, percent; null when mrr_at_start is 0. */
  revenue_churn_rate: string | null;
  /** Net revenue churn: (churned + contraction − expansion − reactivated) / mrr_at_start, percent, negative when expansion wins; null when mrr_at_start is 0. */
  net_revenue_churn_rate: string | null;
}

export interface ChurnReport extends ReportHeader {
  rows: ChurnRow[];
}

/** Logo churn and gross and net revenue churn per month, from the same movements as the MRR report (docs/reports.md, "Churn"). */
export async function churnReport(ctx: DataContext, range: ReportRange): Promise<ChurnReport> {
  const { header, months } = await mrrMonths(ctx, range);
  return {
    ...header,
    rows: months.map(({ month, start, movements: m }) => {
      const lost = add(m.churned, m.contraction);
      return {
        month: month.label,
        customers_at_start: m.customersAtStart,
        customers_churned: m.customersChurned,
        logo_churn_rate: percent(m.customersChurned, m.customersAtStart),
        mrr_at_start: start.total,
        churned_mrr: m.churned,
        contraction_mrr: m.contraction,
        expansion_mrr: m.expansion,
        revenue_churn_rate: percent(lost, start.total),
        net_revenue_churn_rate: percent(subtract(lost, add(m.expansion, m.reactivated)), start.total),
      };
    }),
  };
}
