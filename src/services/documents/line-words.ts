import type { LineSubject } from '../../db/entities/invoice.js';
import { localDate } from '../../domain/billing-calendar.js';
import { LINES_EN_US } from './labels/line-labels-en-US.js';
import { LINES_ID_ID } from './labels/line-labels-id-ID.js';
import type { IntervalWord, LineLabels } from './labels/line-labels.js';
import { type LocaleSettings } from './labels/labels.js';
import { localisation } from './labels/localisation.js';

/*
 * NOTE: a line's words are rendered when its document is, in the document's language
 * (BILLING_LOCALE): the line stores what it is (`subject`), never words of one language. A line
 * made before subjects were kept, or of a subject this catalogue does not know, keeps its stored
 * description (docs/documents.md).
 */

export interface LineWords {
  line(line: { description: string; subject: LineSubject | null }, currency?: string): string;
  /** The line's words with the period it covers when they do not already name it (a faktur line). */
  withPeriod(line: { description: string; subject: LineSubject | null; periodStart: Date | null; periodEnd: Date | null }): string;
}

const INTERVALS: readonly string[] = ['day', 'week', 'month', 'year'];
/** Units as a usage line stores them: exact decimal text (formatUnits). */
const UNITS = /^\d+(\.\d+)?$/;

/**
 * Exact decimal units in the locale's digits ("12500.25" → "12.500,25" in Bahasa Indonesia,
 * "12,500.25" in English), grouped as text: units are never rounded through a float.
 */
function groupedUnits(units: string, locale: string): string {
  const parts = new Intl.NumberFormat(locale).formatToParts(1234.5);
  const group = parts.find((p) => p.type === 'group')?.value ?? ',';
  const decimal = parts.find((p) => p.type === 'decimal')?.value ?? '.';
  const [whole, fraction] = units.split('.');
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, group);
  return fraction ? `${grouped}${decimal}${fraction}` : grouped;
}

function linesFor(locale: string): LineLabels {
  return new Intl.Locale(locale).language === 'id' ? LINES_ID_ID : LINES_EN_US;
}

/** The words of lines in the language of `settings`. */
export function lineWordsFor(settings: LocaleSettings): LineWords {
  const words = linesFor(settings.locale);
  const { format } = localisation(settings);
  return {
    withPeriod(line) {
      const named = this.line(line);
      // A renewal's period line already names its days ("Pro (1 Maret 2026 s.d. 1 April 2026)").
      if (!line.periodStart || !line.periodEnd || line.subject?.type === 'period') return named;
      return words.during(named, format.day(localDate(line.periodStart, settings.timeZone)), format.day(localDate(line.periodEnd, settings.timeZone)));
    },
    line({ description, subject }, currency = 'IDR') {
      if (!subject) return description;
      const text = (key: string) => (typeof subject[key] === 'string' ? (subject[key] as string) : null);
      const plan = text('plan');
      switch (subject.type) {
        case 'first_period': {
          const count = subject.count;
          const unit = text('unit');
          if (!plan || typeof count !== 'number' || !unit || !INTERVALS.includes(unit)) return description;
          return words.firstPeriod(plan, count, unit as IntervalWord);
        }
        case 'period': {
          const [start, end] = [text('start'), text('end')];
          return plan && start && end ? words.period(plan, format.day(start), format.day(end)) : description;
        }
        case 'unused_time': {
          const to = text('to');
          return plan ? (to ? words.unusedTimeMoved(plan, to) : words.unusedTime(plan)) : description;
        }
        case 'remaining_time':
          return plan ? words.remainingTime(plan) : description;
        case 'new_period':
          return plan ? words.newPeriod(plan) : description;
        case 'usage': {
          const [metric, units] = [text('metric_name') ?? text('metric'), text('units')];
          return metric && units && UNITS.test(units) ? words.usage(metric, groupedUnits(units, settings.locale)) : description;
        }
        case 'refund': {
          const [refund, order, invoice] = [text('refund'), text('order'), text('invoice')];
          return refund && order && invoice ? words.refund(refund, order, invoice) : description;
        }
        case 'chargeback': {
          const [order, invoice, total] = [text('order'), text('invoice'), text('total')];
          return order && invoice && total ? words.chargeback(order, invoice, format.money(total, currency)) : description;
        }
        case 'unusable_settlement': {
          const [order, invoice, why] = [text('order'), text('invoice'), text('why')];
          return order && invoice ? words.unusableSettlement(order, invoice, why === null ? null : (words.unusableWhy[why] ?? why)) : description;
        }
        case 'period_passed': {
          const [order, invoice, start, end] = [text('order'), text('invoice'), text('start'), text('end')];
          return order && invoice && start && end ? words.periodPassed(order, invoice, format.day(start), format.day(end)) : description;
        }
        case 'support_credit':
          return words.supportCredit;
        case 'support_debit':
          return words.supportDebit;
        default:
          return description;
      }
    },
  };
}
