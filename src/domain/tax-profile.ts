import { ValidationError, type FieldError } from './errors.js';
import { isIsoAlpha3 } from './iso-countries.js';

/*
 * NOTE: the buyer identity a Faktur Pajak names (docs/tax.md, "The buyer"). A business has a
 * 16-digit NPWP and places of business with a 22-digit NITKU (the NPWP and a 6-digit suffix,
 * 000000 for the head office); a resident individual is identified by the 16-digit NIK; a
 * foreign buyer by a passport and its country (ISO 3166 alpha-3); anyone else by another
 * identity document. Numbers are kept as strings: leading zeros matter.
 */

export type BuyerType = 'business' | 'individual' | 'foreign' | 'other';
export const BUYER_TYPES: readonly BuyerType[] = ['business', 'individual', 'foreign', 'other'];

export interface TaxProfile {
  buyer_type: BuyerType;
  npwp: string | null;
  nitku: string | null;
  nik: string | null;
  /** A foreign buyer's passport number. */
  passport: string | null;
  /** ISO 3166 alpha-3: the passport's country, or the country of another document (IDN by default). */
  country: string | null;
  /** The number of an `other` buyer's identity document. */
  document_number: string | null;
  name: string;
  address: string;
  email: string | null;
}

export interface TaxProfileInput {
  buyer_type: BuyerType;
  npwp?: string;
  nitku?: string;
  nik?: string;
  passport?: string;
  country?: string;
  document_number?: string;
  name: string;
  address: string;
  email?: string;
}

/**
 * A stored profile with every field present: profiles saved before foreign and other buyers
 * existed lack passport, country and document_number.
 */
export function completeTaxProfile(profile: TaxProfile | null | undefined): TaxProfile | null {
  if (!profile) return null;
  return { ...profile, passport: profile.passport ?? null, country: profile.country ?? null, document_number: profile.document_number ?? null };
}

/** Separators people type into tax numbers (00.123.456.7-809.000) are dropped; anything else stays to be refused. */
function digitsOf(text: string): string {
  return text.replace(/[\s.\-/]/g, '');
}

/** A number of zeros only is a placeholder, never an identity: Coretax refuses such a faktur. */
function isAllZeros(digits: string): boolean {
  return /^0+$/.test(digits);
}

/** A 16-digit NPWP; the 15-digit form of before 2024 gains its leading 0. Null for anything else, zeros included. */
export function normaliseNpwp(text: string): string | null {
  const digits = digitsOf(text);
  if (isAllZeros(digits)) return null;
  if (/^\d{16}$/.test(digits)) return digits;
  if (/^\d{15}$/.test(digits)) return `0${digits}`;
  return null;
}

export function normaliseNitku(text: string): string | null {
  const digits = digitsOf(text);
  return /^\d{22}$/.test(digits) && !isAllZeros(digits) ? digits : null;
}

export function normaliseNik(text: string): string | null {
  const digits = digitsOf(text);
  return /^\d{16}$/.test(digits) && !isAllZeros(digits) ? digits : null;
}

/**
 * NOTE: a NIK is checked as Dukcapil writes it, so a mistyped one is refused at the door rather
 * than by Coretax a month later: 16 digits; the province code (digits 1-2) from 11 (Aceh) to
 * 94 (Papua); the regency and district (3-6); the holder's birth date as DDMMYY (7-12), with
 * 40 added to a woman's day (01-31 for a man, 41-71 for a woman) and the month 01-12; a serial
 * (13-16). Why `nik` (separators dropped) is no NIK, or null when it is one.
 */
export function nikRefusal(nik: string): string | null {
  if (!/^\d{16}$/.test(nik)) return 'A NIK has 16 digits.';
  const province = Number(nik.slice(0, 2));
  const day = Number(nik.slice(6, 8));
  const month = Number(nik.slice(8, 10));
  if (province < 11 || province > 94) return `A NIK starts with a province code from 11 to 94, not ${nik.slice(0, 2)}.`;
  if (!((day >= 1 && day <= 31) || (day >= 41 && day <= 71))) {
    return `A NIK's birth date (digits 7 to 12, DDMMYY) has a day from 01 to 31, or 41 to 71 for a woman, not ${nik.slice(6, 8)}.`;
  }
  if (month < 1 || month > 12) return `A NIK's birth date (digits 7 to 12, DDMMYY) has a month from 01 to 12, not ${nik.slice(8, 10)}.`;
  return null;
}

/** A passport or other document number: letters and digits (separators dropped, upper-cased), 3 to 30 of them, not all zeros. */
export function normaliseDocumentNumber(text: string): string | null {
  const compact = text.replace(/[\s.\-/]/g, '').toUpperCase();
  return /^[A-Z0-9]{3,30}$/.test(compact) && !isAllZeros(compact) ? compact : null;
}

const ZEROS_MESSAGE = 'made only of zeros, which is no identity';

/**
 * The profile to store for `input` (already shaped by the contract), or a 400 naming every
 * malformed field. A business's NITKU defaults to its head office.
 */
export function parseTaxProfile(input: TaxProfileInput): TaxProfile {
  const errors: FieldError[] = [];
  const name = input.name.trim();
  const address = input.address.trim();
  if (name === '') errors.push({ field: 'name', message: 'The registered name is required.' });
  if (address === '') errors.push({ field: 'address', message: 'The registered address is required.' });
  const profile: TaxProfile = {
    buyer_type: input.buyer_type, npwp: null, nitku: null, nik: null, passport: null, country: null, document_number: null,
    name, address, email: input.email?.trim() || null,
  };
  const given = (field: keyof TaxProfileInput) => input[field] !== undefined;
  const refuse = (field: string, message: string) => errors.push({ field, message });
  const zerosOnly = (text: string) => isAllZeros(digitsOf(text));
  const allowed: Record<BuyerType, (keyof TaxProfileInput)[]> = {
    business: ['npwp', 'nitku'],
    individual: ['nik'],
    foreign: ['passport', 'country'],
    other: ['document_number', 'country'],
  };
  const meaning: Record<BuyerType, string> = {
    business: 'a business is identified by its NPWP (and NITKU)',
    individual: 'an individual is identified by a NIK',
    foreign: 'a foreign buyer is identified by a passport and its country',
    other: 'this buyer is identified by a document_number (and its country)',
  };
  for (const field of ['npwp', 'nitku', 'nik', 'passport', 'country', 'document_number'] as const) {
    if (given(field) && !allowed[input.buyer_type].includes(field)) refuse(field, `Not for a ${input.buyer_type} buyer: ${meaning[input.buyer_type]}.`);
  }

  if (input.buyer_type === 'business') {
    if (input.npwp === undefined) refuse('npwp', 'A business needs its NPWP.');
    else {
      profile.npwp = normaliseNpwp(input.npwp);
      if (!profile.npwp) refuse('npwp', zerosOnly(input.npwp) ? `An NPWP ${ZEROS_MESSAGE}.` : 'An NPWP has 16 digits (or 15 of the old format).');
    }
    if (input.nitku !== undefined) {
      profile.nitku = normaliseNitku(input.nitku);
      if (!profile.nitku) refuse('nitku', zerosOnly(input.nitku) ? `A NITKU ${ZEROS_MESSAGE}.` : 'A NITKU has 22 digits.');
      else if (profile.npwp && !profile.nitku.startsWith(profile.npwp)) refuse('nitku', 'A NITKU starts with the NPWP it belongs to.');
    } else if (profile.npwp) {
      profile.nitku = `${profile.npwp}000000`;
    }
  } else if (input.buyer_type === 'individual') {
    if (input.nik === undefined) refuse('nik', 'An individual needs a NIK.');
    else {
      const why = zerosOnly(input.nik) ? `A NIK ${ZEROS_MESSAGE}.` : nikRefusal(digitsOf(input.nik));
      if (why) refuse('nik', why);
      else profile.nik = normaliseNik(input.nik);
    }
  } else {
    const numberField = input.buyer_type === 'foreign' ? 'passport' : 'document_number';
    const typed = input[numberField];
    if (typed === undefined) refuse(numberField, input.buyer_type === 'foreign' ? 'A foreign buyer needs a passport number.' : 'This buyer needs the number of an identity document.');
    else {
      const number = normaliseDocumentNumber(typed);
      if (!number) refuse(numberField, zerosOnly(typed) ? `A document number ${ZEROS_MESSAGE}.` : 'A document number has 3 to 30 letters and digits.');
      else profile[numberField] = number;
    }
    const country = input.country?.trim().toUpperCase();
    if (country === undefined) {
      if (input.buyer_type === 'foreign') refuse('country', "A foreign buyer needs the passport's country (ISO 3166 alpha-3, e.g. SGP).");
      else profile.country = 'IDN';
    } else if (!isIsoAlpha3(country)) refuse('country', `A country is an ISO 3166 alpha-3 code (SGP, AUS, USA), got "${input.country}".`);
    else if (input.buyer_type === 'foreign' && country === 'IDN') refuse('country', 'A passport of Indonesia is not a foreign buyer: give the NIK (individual) instead.');
    else profile.country = country;
  }
  if (errors.length > 0) throw new ValidationError(errors);
  return profile;
}
