import { documentFormat, type DocumentFormat } from '../format.js';
import { EN_US } from './en-US.js';
import { ID_ID } from './id-ID.js';
import type { Labels, LocaleSettings } from './labels.js';

/**
 * The defaults of BILLING_LOCALE and BILLING_TIMEZONE (src/config.ts): for the callers that
 * are not yet handed the configuration.
 */
export const DEFAULT_LOCALE_SETTINGS: LocaleSettings = { locale: 'id-ID', timeZone: 'Asia/Jakarta' };

/**
 * NOTE: the labels follow the locale's language: Bahasa Indonesia for `id` (id-ID), English for
 * every other locale, whose numbers and dates keep their own formats (en-GB reads "1 April
 * 2026", de-DE "150.000 IDR"): a locale we have no catalogue for still reads as its users write
 * numbers and dates.
 */
export function labelsFor(locale: string): Labels {
  return new Intl.Locale(locale).language === 'id' ? ID_ID : EN_US;
}

/** The labels and formats of a document, an email or a notification. */
export interface Localisation {
  labels: Labels;
  format: DocumentFormat;
}

const made = new Map<string, Localisation>();

/**
 * One per locale and time zone, made once: the Intl formatters are slow to construct, and a
 * billing run writes a notification for every subscription it renews.
 */
export function localisation(settings: LocaleSettings): Localisation {
  const key = `${settings.locale}|${settings.timeZone}`;
  let found = made.get(key);
  if (!found) made.set(key, (found = { labels: labelsFor(settings.locale), format: documentFormat(settings) }));
  return found;
}
