import type { DocumentSettings } from '../../config.js';
import { isWholeUnitCurrency } from '../../domain/money.js';

/**
 * How amounts and dates read on a document, in BILLING_LOCALE and BILLING_TIMEZONE. ICU puts a
 * no-break space after the currency symbol ("Rp 150.000"); it becomes a plain space so that the
 * text copied or extracted from a PDF is what a person would type.
 */
export interface DocumentFormat {
  /**
   * "150000.00" in IDR → "Rp 150.000": IDR (and the other whole-unit currencies) without
   * decimals unless the amount has cents, the rest with two. Without a currency code, the
   * number alone in the locale's digits ("33.333,33").
   */
  money(amount: string, currency: string): string;
  /** A calendar date ("2026-03-03") as written in the locale ("3 Maret 2026"). */
  day(isoDay: string): string;
  /** An instant, as its date in the documents' time zone ("1 April 2026"). */
  date(at: Date): string;
  /** An instant's date, abbreviated ("25 Jan 2026"): for periods, which show two. */
  shortDate(at: Date): string;
  /** An instant with its time of day and the zone's short name ("1 April 2026 pukul 01.30 WIB"). */
  dateTime(at: Date): string;
}

const plainSpaces = (text: string): string => text.replace(/[\u00a0\u202f]/g, ' ');

/**
 * NOTE: the fraction digits are pinned rather than taken from ICU: ICU 78 writes IDR without
 * decimals, older ICU wrote ",00" (docs/documents.md), and a document must read the same on
 * every Node.js.
 */
export function documentFormat(settings: Pick<DocumentSettings, 'locale' | 'timeZone'>): DocumentFormat {
  const { locale, timeZone } = settings;
  const numberFormats = new Map<string, Intl.NumberFormat>();
  const numberFormat = (currency: string | null, digits: number) => {
    const key = `${currency ?? ''}:${digits}`;
    let format = numberFormats.get(key);
    if (!format) {
      const fraction = { minimumFractionDigits: digits, maximumFractionDigits: digits };
      format = new Intl.NumberFormat(locale, currency ? { style: 'currency', currency, ...fraction } : fraction);
      numberFormats.set(key, format);
    }
    return format;
  };
  // Each made on first use: an email or a notification needs one or two of them.
  const lazy = (options: Intl.DateTimeFormatOptions) => {
    let format: Intl.DateTimeFormat | null = null;
    return () => (format ??= new Intl.DateTimeFormat(locale, options));
  };
  const dayFormat = lazy({ dateStyle: 'long', timeZone: 'UTC' });
  const dateFormat = lazy({ dateStyle: 'long', timeZone });
  const shortDateFormat = lazy({ dateStyle: 'medium', timeZone });
  const dateTimeFormat = lazy({ dateStyle: 'long', timeStyle: 'short', timeZone });
  const zoneFormat = lazy({ timeZone, timeZoneName: 'short' });
  const zoneName = (at: Date) => zoneFormat().formatToParts(at).find((p) => p.type === 'timeZoneName')?.value ?? timeZone;

  return {
    money(amount, currency) {
      const text = amount.trim();
      const match = /^-?\d+(?:\.(\d+))?$/.exec(text);
      const code = /^[A-Za-z]{3}$/.test(currency.trim()) ? currency.trim().toUpperCase() : null;
      if (!match) return code ? `${code} ${amount}` : amount;
      const cents = /[1-9]/.test(match[1] ?? '');
      const digits = cents ? 2 : code && !isWholeUnitCurrency(code) ? 2 : 0;
      // The decimal string goes to ICU as a string: formatted exactly, never through a float.
      const format = numberFormat(code, digits).format as unknown as (value: string) => string;
      return plainSpaces(format(text));
    },
    day(isoDay) {
      const at = new Date(`${isoDay}T00:00:00Z`);
      return Number.isNaN(at.getTime()) ? isoDay : plainSpaces(dayFormat().format(at));
    },
    date(at) {
      return plainSpaces(dateFormat().format(at));
    },
    shortDate(at) {
      return plainSpaces(shortDateFormat().format(at));
    },
    dateTime(at) {
      return plainSpaces(`${dateTimeFormat().format(at)} ${zoneName(at)}`);
    },
  };
}
