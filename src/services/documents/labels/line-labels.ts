/*
 * The words of invoice and credit-note lines, one catalogue per language (line-labels-id-ID.ts,
 * line-labels-en-US.ts). A line stores what it is (its subject: {type: 'remaining_time', plan:
 * 'Pro'}); its words are made here when a document or a faktur is rendered, in the document's
 * language (docs/documents.md). Dates come formatted (format.ts).
 */

export type IntervalWord = 'day' | 'week' | 'month' | 'year';

export interface LineLabels {
  /** A new subscription's first period: "Pro (first 1 month)". */
  firstPeriod: (plan: string, count: number, unit: IntervalWord) => string;
  /** A renewal's period, its days formatted: "Pro (1 March 2026 to 1 April 2026)". */
  period: (plan: string, start: string, end: string) => string;
  /** A plan change's credit for the old plan's unused time. */
  unusedTime: (plan: string) => string;
  /** The same credit given to the wallet (its credit note): the plan moved to is named. */
  unusedTimeMoved: (plan: string, to: string) => string;
  /** A plan change's charge for the new plan's remaining time. */
  remainingTime: (plan: string) => string;
  /** A plan change that starts a new period. */
  newPeriod: (plan: string) => string;
  refund: (refund: string, order: string, invoice: string) => string;
  /** `total`: all that was charged back on the payment, formatted. */
  chargeback: (order: string, invoice: string, total: string) => string;
  /** A settlement nobody could use, credited to the wallet; `why` from unusableWhy, or null. */
  unusableSettlement: (order: string, invoice: string, why: string | null) => string;
  /** A renewal's payment that settled after its period had passed, credited to the wallet; the days formatted. */
  periodPassed: (order: string, invoice: string, start: string, end: string) => string;
  /** A usage charge billed in arrears: the metric's name and the units counted, formatted ("12,500"). */
  usage: (metric: string, units: string) => string;
  /** A line's words with the period it covers, the days formatted (a faktur line names both). */
  during: (words: string, start: string, end: string) => string;
  /** A support adjustment of the wallet that staff gave no words of their own. */
  supportCredit: string;
  supportDebit: string;
  /** Why a settlement could not be used, by its code (an unknown code is shown as it is). */
  unusableWhy: Record<string, string>;
}
