import type { Context } from 'koa';
import { documentFormat, type DocumentFormat } from '../../services/documents/format.js';
import { en } from './messages/en.js';
import { id, type Messages } from './messages/id.js';

export type Language = 'id' | 'en';
const CATALOGUES: Record<Language, Messages> = { id, en };

/** The language a request asks for by `?lang=`, if it asks. */
export function askedLanguage(ctx: Context): Language | null {
  const asked = ctx.query.lang;
  return asked === 'en' || asked === 'id' ? asked : null;
}

/**
 * The page's language: `?lang=` when given, else the one chosen earlier on the same link
 * (`stored`, kept across reloads and redirects), else Accept-Language when it ranks English
 * above Indonesian (a browser that names only English, or puts it first), else Bahasa
 * Indonesia.
 */
export function pickLanguage(ctx: Context, stored: string | null = null): Language {
  const asked = askedLanguage(ctx);
  if (asked) return asked;
  if (stored === 'en' || stored === 'id') return stored;
  let best: { lang: Language; q: number } | null = null;
  for (const part of (ctx.get('accept-language') || '').split(',')) {
    const [tag = '', ...params] = part.trim().toLowerCase().split(';');
    const primary = tag.split('-')[0];
    if (primary !== 'en' && primary !== 'id') continue;
    const qParam = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const q = qParam ? Number(qParam.slice(2)) : 1;
    if (!Number.isFinite(q) || q <= 0) continue;
    if (!best || q > best.q) best = { lang: primary, q };
  }
  return best?.lang ?? 'id';
}

export type Translate = (key: keyof Messages, vars?: Record<string, string | number>) => string;

export function translator(lang: Language): Translate {
  const messages = CATALOGUES[lang];
  return (key, vars = {}) => messages[key].replace(/\{(\w+)\}/g, (whole, name: string) => (name in vars ? String(vars[name]) : whole));
}

export interface PageFormat {
  /**
   * Amounts as Indonesians write them in either language: "Rp 150.000", with a no-break space
   * (U+00A0) so that "Rp" and its number never wrap apart on a narrow phone.
   */
  money(amount: string, currency: string): string;
  /** An instant with its time of day, in BILLING_TIMEZONE and the page's language. */
  dateTime(at: Date): string;
  date(at: Date): string;
}

export function pageFormat(lang: Language, timeZone: string): PageFormat {
  // NOTE: amounts keep Indonesian digits in English too ("Rp 150.000"): the customer pays in
  // rupiah and compares with what their bank shows; only words and dates change.
  const amounts: DocumentFormat = documentFormat({ locale: 'id-ID', timeZone });
  const dates: DocumentFormat = documentFormat({ locale: lang === 'en' ? 'en-GB' : 'id-ID', timeZone });
  return { money: (a, c) => amounts.money(a, c).replace(/ /g, '\u00a0'), dateTime: (at) => dates.dateTime(at), date: (at) => dates.date(at) };
}
