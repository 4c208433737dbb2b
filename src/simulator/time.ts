const GMT7_MS = 7 * 3_600_000;

function pad(n: number, width = 2): string {
  return String(n).padStart(width, '0');
}

/** Core API timestamps: "YYYY-MM-DD HH:mm:ss" in GMT+7 without a zone. */
export function formatGmt7(d: Date): string {
  const t = new Date(d.getTime() + GMT7_MS);
  return (
    `${t.getUTCFullYear()}-${pad(t.getUTCMonth() + 1)}-${pad(t.getUTCDate())} ` +
    `${pad(t.getUTCHours())}:${pad(t.getUTCMinutes())}:${pad(t.getUTCSeconds())}`
  );
}

const REQUEST_TIME = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2}) ([+-])(\d{2})(\d{2})$/;

/** Request-side times such as custom_expiry.order_time: "YYYY-MM-DD HH:mm:ss +0700". */
export function parseRequestTime(value: string): Date | null {
  const m = REQUEST_TIME.exec(value);
  if (!m) return null;
  const [y, mo, d, h, mi, s, sign, oh, om] = m.slice(1);
  const local = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s));
  const check = new Date(local);
  if (check.getUTCMonth() !== Number(mo) - 1 || check.getUTCDate() !== Number(d)) return null;
  const offset = (sign === '-' ? -1 : 1) * (Number(oh) * 60 + Number(om)) * 60_000;
  return new Date(local - offset);
}
