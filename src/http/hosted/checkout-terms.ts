import { compare, type Money } from '../../domain/money.js';
import { PromotionCodeInvalidError, ValidationError } from '../../domain/errors.js';
import { checkoutTerms, type CheckoutPricing, type TrialOffer } from '../../services/hosted/checkout.js';
import { promotionCodeKey } from '../../services/coupons/redeem.js';
import { formFieldErrors, promotionCodeText } from './field-errors.js';
import type { PageRequest } from './page-kit.js';

/*
 * The units and promotion code a plan checkout's form gives, how the page prices them, and
 * whether a submitted form was priced for what it asks to buy.
 */

/** The terms a form gives: `quantity` as a number when typed (NaN when not one), the code as typed ('' for none). */
export interface TypedTerms {
  quantity?: number;
  promotionCode?: string | null;
}

export function typedTerms(page: PageRequest, form: Record<string, string>): TypedTerms | null {
  if (!page.session.plan) return null;
  const terms: TypedTerms = {};
  if (form.quantity !== undefined) terms.quantity = /^\s*\d{1,6}\s*$/.test(form.quantity) ? Number(form.quantity) : Number.NaN;
  if (form.promotion_code !== undefined) terms.promotionCode = form.promotion_code.slice(0, 64);
  return terms;
}

/**
 * The units and promotion code the page prices: those just typed when they can be bought, else
 * the checkout's own (a refused code is shown in its field, never priced).
 */
export async function pricedTerms(page: PageRequest, typed: TypedTerms | null): Promise<CheckoutPricing | null> {
  if (!page.session.plan) return null;
  if (typed) {
    try {
      return await checkoutTerms(page.services, page.session, typed);
    } catch (err) {
      if (!(err instanceof PromotionCodeInvalidError) && !(err instanceof ValidationError)) throw err;
      try {
        return await checkoutTerms(page.services, page.session, { quantity: typed.quantity, promotionCode: null });
      } catch (again) {
        if (!(again instanceof ValidationError)) throw again;
      }
    }
  }
  try {
    return await checkoutTerms(page.services, page.session, {});
  } catch (err) {
    // The checkout's own code can no longer be redeemed (used up since), or its plan is no longer
    // priced per unit: priced without what no longer holds; pressing pay says why next to the field.
    if (err instanceof PromotionCodeInvalidError) return checkoutTerms(page.services, page.session, { promotionCode: null }).catch(() => checkoutTerms(page.services, page.session, { quantity: 1, promotionCode: null }));
    if (err instanceof ValidationError) return checkoutTerms(page.services, page.session, { quantity: 1, promotionCode: null });
    throw err;
  }
}

/** The field errors of terms that cannot be bought, in the page's language; else their price. */
export async function termsRefusal(page: PageRequest, typed: TypedTerms): Promise<{ errors: Record<string, string>; priced: null } | { errors: null; priced: CheckoutPricing }> {
  try {
    return { errors: null, priced: await checkoutTerms(page.services, page.session, typed) };
  } catch (err) {
    if (err instanceof PromotionCodeInvalidError) return { errors: { promotion_code: promotionCodeText(page.t, err.reason) }, priced: null };
    if (err instanceof ValidationError) {
      return { errors: formFieldErrors(page.t, err.errors, { quantity: 'quantity', promotion_code: 'promotion_code' }) ?? { quantity: page.t('field.invalid') }, priced: null };
    }
    throw err;
  }
}

/** What the pay button asks for today: nothing when a trial starts, else the first period's total. */
export function dueToday(priced: CheckoutPricing, offer: TrialOffer | null): Money {
  return offer ? '0.00' : priced.pricing.tax.total;
}

/** The hidden fields by which a form says what it was priced for (the page writes them, the submit reads them). */
export interface PricedFields {
  priced_quantity: string;
  priced_promotion_code: string;
  priced_due: Money;
}

export function pricedFields(priced: CheckoutPricing, offer: TrialOffer | null): PricedFields {
  return { priced_quantity: String(priced.quantity), priced_promotion_code: priced.promotionCode ?? '', priced_due: dueToday(priced, offer) };
}

/**
 * NOTE: the amount on the pay button is the amount charged. A submitted form buys the terms it
 * was priced for: units or a code typed into it without pressing Apply, or a due amount that
 * pricing them now no longer gives (a trial taken meanwhile), make it a form priced for other
 * terms, and nothing may be charged until the customer has seen the new total. A form without
 * the priced fields (a page rendered before they existed) was priced for the checkout's own terms.
 */
export function pricedAsSubmitted(page: PageRequest, form: Record<string, string>, submitted: CheckoutPricing, offer: TrialOffer | null): boolean {
  const session = page.session;
  const quantity = form.priced_quantity !== undefined ? Number(form.priced_quantity) : session.quantity;
  const code = form.priced_promotion_code !== undefined ? form.priced_promotion_code : (session.promotionCode ?? '');
  if (quantity !== submitted.quantity) return false;
  if (promotionCodeKey(code) !== promotionCodeKey(submitted.promotionCode ?? '')) return false;
  if (form.priced_due === undefined) return true;
  return /^\d{1,13}(\.\d{1,2})?$/.test(form.priced_due) && compare(form.priced_due, dueToday(submitted, offer)) === 0;
}
