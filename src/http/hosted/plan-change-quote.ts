import { createHmac, timingSafeEqual } from 'node:crypto';
import type { PlanChangeQuote } from '../../services/subscriptions/change-subscription-plan.js';

/*
 * The portal's plan-change preview hands its confirm form a quote: the page, subscription and
 * plan it is for, the instant it was priced at and the net shown, signed with the app's key
 * (under its own label, so that no CSRF token can pass for a quote). The confirm prices the
 * change at that instant again; a quote changed by hand fails its signature.
 */

export interface SignedQuote extends PlanChangeQuote {
  sessionId: string;
  subscriptionId: string;
  planId: string;
}

const LABEL = 'hosted-plan-change-quote:';

const sign = (key: string, body: string): string => createHmac('sha256', key).update(LABEL + body).digest('base64url');

export function signQuote(key: string, quote: SignedQuote): string {
  const body = Buffer.from(JSON.stringify([quote.sessionId, quote.subscriptionId, quote.planId, quote.pricedAt.getTime(), quote.net])).toString('base64url');
  return `${body}.${sign(key, body)}`;
}

/** The quote a form carried, or null when it is missing, malformed or not signed by this app. */
export function readQuote(key: string, text: unknown): SignedQuote | null {
  if (typeof text !== 'string' || text.length > 1000) return null;
  const [body, mac, ...rest] = text.split('.');
  if (!body || !mac || rest.length > 0) return null;
  const expected = Buffer.from(sign(key, body));
  const given = Buffer.from(mac);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  let fields: unknown;
  try {
    fields = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  if (!Array.isArray(fields) || fields.length !== 5) return null;
  const [sessionId, subscriptionId, planId, pricedAt, net] = fields as unknown[];
  if (typeof sessionId !== 'string' || typeof subscriptionId !== 'string' || typeof planId !== 'string' || typeof pricedAt !== 'number') return null;
  if (net !== null && typeof net !== 'string') return null;
  return { sessionId, subscriptionId, planId, pricedAt: new Date(pricedAt), net };
}
