import { randomUUID } from 'node:crypto';

/**
 * Midtrans's card tokenization, as the simulator plays it (docs/gateway.md): the
 * browser sends the card to `GET /v2/token` with the Client Key and gets a one-time `token_id`
 * to charge with; the merchant's server never sees the card. Any Luhn-valid number with a
 * future expiry and a 3- or 4-digit CVV is tokenized; the charge then asks for 3-D Secure.
 */
export function tokenizeCard(query: Record<string, unknown>, now: Date): Record<string, unknown> {
  const field = (name: string) => (typeof query[name] === 'string' ? (query[name] as string).trim() : '');
  const messages: string[] = [];
  if (field('client_key') === '') messages.push('client_key is required');
  const number = field('card_number').replace(/[\s-]/g, '');
  if (!/^\d{12,19}$/.test(number) || !luhn(number)) messages.push('card_number is invalid');
  const month = Number(field('card_exp_month'));
  const year = Number(field('card_exp_year'));
  if (!/^\d{1,2}$/.test(field('card_exp_month')) || month < 1 || month > 12) messages.push('card_exp_month is invalid');
  else if (!/^\d{4}$/.test(field('card_exp_year')) || year * 12 + month < now.getUTCFullYear() * 12 + now.getUTCMonth() + 1) messages.push('card_exp_year is invalid or the card has expired');
  if (!/^\d{3,4}$/.test(field('card_cvv'))) messages.push('card_cvv is invalid');
  if (messages.length > 0) return { status_code: '400', status_message: 'One or more parameters in the payload is invalid.', validation_messages: messages };
  return {
    status_code: '200',
    status_message: 'Credit card token is created as Token ID.',
    token_id: `${number.slice(0, 6)}-${number.slice(-4)}-${randomUUID()}`,
    hash: `${number.slice(0, 6)}-${number.slice(-4)}-mandiri`,
    redirect_url: null,
  };
}

function luhn(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i += 1) {
    let d = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

/**
 * The simulator's stand-in for Midtrans's `midtrans-new-3ds.min.js`: the same global
 * (`MidtransNew3ds.getCardToken(cardData, {onSuccess, onFailure})`), asking the simulator's
 * /v2/token with the Client Key of its script tag.
 */
export const CARD_SCRIPT = `(function () {
  'use strict';
  var script = document.currentScript;
  var base = script.src.replace(/\\/v2\\/assets\\/js\\/[^/]*$/, '');
  var clientKey = script.getAttribute('data-client-key') || '';
  window.MidtransNew3ds = {
    getCardToken: function (card, callbacks) {
      var query = new URLSearchParams({ client_key: clientKey, card_number: card.card_number || '', card_exp_month: card.card_exp_month || '', card_exp_year: card.card_exp_year || '', card_cvv: card.card_cvv || '' });
      fetch(base + '/v2/token?' + query.toString())
        .then(function (res) { return res.json(); })
        .then(function (body) { if (body.status_code === '200') callbacks.onSuccess(body); else callbacks.onFailure(body); }, function () { callbacks.onFailure({ status_message: 'network error' }); });
    },
  };
})();
`;
