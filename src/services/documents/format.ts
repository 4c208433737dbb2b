import type { DocumentSettings } from '../../config.js';

/**
 * How amounts and dates read on a document, in BILLING_LOCALE and BILLING_TIMEZONE. ICU puts a
 * no-break space after the currency symbol ("Rp 150.000"); it becomes a plain space so that the
 * text copied or extracted from a PDF is what a person would type.
 */
export interface DocumentFormat {
  /** "150000.00" in IDR → "Rp 150.000" (the locale's usual digits; IDR cents only when there are any). */
  money(amount: string, currency: string): string;
  /** A calendar date ("2026-03-03") as written in the locale ("3 Maret 2026"). */
  day(isoDay: string): string;
  /** An instant, as its date in the documents' time zone. */
  date(at: Date): string;
  /** An instant's date, abbreviated ("25 Jan 2026"): for periods, which show two. */
  shortDate(at: Date): string;
  /** An instant with its time of day and the zone's short name ("3 Mar 2026 17.00 WIB"). */
  dateTime(at: Date): string;
}

const plainSpaces = (text: string): string => text.replace(/[\u00a0\u202f]/g, ' ');

export function documentFormat(settings: Pick<DocumentSettings, 'locale' | 'timeZone'>): DocumentFormat {
  const { locale, timeZone } = settings;
  const currencyFormats = new Map<string, { usual: Intl.NumberFormat; cents: Intl.NumberFormat }>();
  const currencyFormat = (currency: string) => {
    let formats = currencyFormats.get(currency);
    if (!formats) {
      const base = { style: 'currency', currency } as const;
      formats = {
        usual: new Intl.NumberFormat(locale, base),
        cents: new Intl.NumberFormat(locale, { ...base, minimumFractionDigits: 2, maximumFractionDigits: 2 }),
      };
      currencyFormats.set(currency, formats);
    }
    return formats;
  };
  const dayFormat = new Intl.DateTimeFormat(locale, { dateStyle: 'long', timeZone: 'UTC' });
  const dateFormat = new Intl.DateTimeFormat(locale, { dateStyle: 'long', timeZone });
  const shortDateFormat = new Intl.DateTimeFormat(locale, { dateStyle: 'medium', timeZone });
  const dateTimeFormat = new Intl.DateTimeFormat(locale, { dateStyle: 'medium', timeStyle: 'short', timeZone });
  const zoneName = (at: Date) => new Intl.DateTimeFormat(locale, { timeZone, timeZoneName: 'short' }).formatToParts(at).find((p) => p.type === 'timeZoneName')?.value ?? timeZone;

  return {
    money(amount, currency) {
      const match = /^(-?)(\d+)(?:\.(\d+))?$/.exec(amount.trim());
      if (!match) return `${currency} ${amount}`;
      const formats = currencyFormat(currency.toUpperCase());
      // The locale writes IDR without cents; an amount that has some keeps them visible.
      const hidesCents = /[1-9]/.test(match[3] ?? '') && (formats.usual.resolvedOptions().maximumFractionDigits ?? 2) < 2;
      // The decimal string goes to ICU as a string: formatted exactly, never through a float.
      const format = (hidesCents ? formats.cents : formats.usual).format as unknown as (value: string) => string;
      return plainSpaces(format(amount.trim()));
    },
    day(isoDay) {
      const at = new Date(`${isoDay}T00:00:00Z`);
      return Number.isNaN(at.getTime()) ? isoDay : plainSpaces(dayFormat.format(at));
    },
    date(at) {
      return plainSpaces(dateFormat.format(at));
    },
    shortDate(at) {
      return plainSpaces(shortDateFormat.format(at));
    },
    dateTime(at) {
      return plainSpaces(`${dateTimeFormat.format(at)} ${zoneName(at)}`);
    },
  };
}
