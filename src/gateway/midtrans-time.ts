const TIME = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?\s*(Z|[+-]\d{2}:?\d{2})?$/;
const GMT7_MINUTES = 7 * 60;

/**
 * Parses Midtrans timestamps leniently. Core API times ("2024-05-01 10:00:00") carry no zone
 * and are GMT+7; request-style times add " +0700"; subscription times are ISO-like.
 */
export function parseMidtransTime(value: unknown): Date | null {
  if (typeof value !== 'string') return null;
  const m = TIME.exec(value.trim());
  if (!m) return null;
  const [, y, mo, d, h, mi, s, frac = '', zone] = m;
  const fields = [y, mo, d, h, mi, s].map(Number) as [number, number, number, number, number, number];
  const ms = Number((frac + '000').slice(0, 3));
  const local = Date.UTC(fields[0], fields[1] - 1, fields[2], fields[3], fields[4], fields[5], ms);
  const check = new Date(local);
  // Date.UTC rolls 2024-02-30 over into March; such a value is garbage, not a date.
  if (check.getUTCMonth() !== fields[1] - 1 || check.getUTCDate() !== fields[2] || fields[3] > 23 || fields[4] > 59 || fields[5] > 59) {
    return null;
  }
  return new Date(local - offsetMinutes(zone) * 60_000);
}

function offsetMinutes(zone: string | undefined): number {
  if (zone === undefined) return GMT7_MINUTES;
  if (zone === 'Z') return 0;
  const sign = zone.startsWith('-') ? -1 : 1;
  const digits = zone.slice(1).replace(':', '');
  return sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2, 4)));
}
