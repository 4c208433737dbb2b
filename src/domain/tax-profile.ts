import { ValidationError, type FieldError } from './errors.js';

/*
 * NOTE: the buyer identity a Faktur Pajak names (DECISIONS §11, tax/CORETAX.md §2). Under PMK
 * 112/2022 a business has a 16-digit NPWP and places of business with a 22-digit NITKU (the
 * NPWP and a 6-digit suffix, 000000 for the head office); a resident individual is identified
 * by the 16-digit NIK. Numbers are kept as digit strings: leading zeros matter.
 */

export type BuyerType = 'business' | 'individual';

export interface TaxProfile {
  buyer_type: BuyerType;
  npwp: string | null;
  nitku: string | null;
  nik: string | null;
  name: string;
  address: string;
  email: string | null;
}

export interface TaxProfileInput {
  buyer_type: BuyerType;
  npwp?: string;
  nitku?: string;
  nik?: string;
  name: string;
  address: string;
  email?: string;
}

/** Separators people type into tax numbers (00.123.456.7-809.000) are dropped; anything else stays to be refused. */
function digitsOf(text: string): string {
  return text.replace(/[\s.\-/]/g, '');
}

/** A 16-digit NPWP; the 15-digit form of before 2024 gains its leading 0. */
export function normaliseNpwp(text: string): string | null {
  const digits = digitsOf(text);
  if (/^\d{16}$/.test(digits)) return digits;
  if (/^\d{15}$/.test(digits)) return `0${digits}`;
  return null;
}

export function normaliseNitku(text: string): string | null {
  const digits = digitsOf(text);
  return /^\d{22}$/.test(digits) ? digits : null;
}

export function normaliseNik(text: string): string | null {
  const digits = digitsOf(text);
  return /^\d{16}$/.test(digits) ? digits : null;
}

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
  let npwp: string | null = null;
  let nitku: string | null = null;
  let nik: string | null = null;
  if (input.buyer_type === 'business') {
    if (input.nik !== undefined) errors.push({ field: 'nik', message: 'A business is identified by its NPWP, not a NIK.' });
    if (input.npwp === undefined) errors.push({ field: 'npwp', message: 'A business needs its NPWP.' });
    else {
      npwp = normaliseNpwp(input.npwp);
      if (!npwp) errors.push({ field: 'npwp', message: 'An NPWP has 16 digits (or 15 of the old format).' });
    }
    if (input.nitku !== undefined) {
      nitku = normaliseNitku(input.nitku);
      if (!nitku) errors.push({ field: 'nitku', message: 'A NITKU has 22 digits.' });
      else if (npwp && !nitku.startsWith(npwp)) errors.push({ field: 'nitku', message: 'A NITKU starts with the NPWP it belongs to.' });
    } else if (npwp) {
      nitku = `${npwp}000000`;
    }
  } else {
    if (input.npwp !== undefined) errors.push({ field: 'npwp', message: 'An individual is identified by a NIK; a business gives its NPWP.' });
    if (input.nitku !== undefined) errors.push({ field: 'nitku', message: 'Only a business has a NITKU.' });
    if (input.nik === undefined) errors.push({ field: 'nik', message: 'An individual needs a NIK.' });
    else {
      nik = normaliseNik(input.nik);
      if (!nik) errors.push({ field: 'nik', message: 'A NIK has 16 digits.' });
    }
  }
  if (errors.length > 0) throw new ValidationError(errors);
  return { buyer_type: input.buyer_type, npwp, nitku, nik, name, address, email: input.email?.trim() || null };
}
