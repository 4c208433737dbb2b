import { beforeAll, describe, expect, it } from 'vitest';
import { Coupon, PromotionCode } from '../../src/db/entities/coupon.js';
import { CreditNote } from '../../src/db/entities/credit-note.js';
import { Payment } from '../../src/db/entities/payment.js';
import { Topup } from '../../src/db/entities/topup.js';
import { WalletTransaction } from '../../src/db/entities/wallet.js';
import { runCli } from '../helpers/cli.js';
import { cliEnv } from '../helpers/cli-server.js';
import { DATABASES } from '../helpers/database.js';
import type { HttpResult } from '../helpers/server.js';
import { activeSubscription, dbOf, fundWallet, serverOnClock, walletBalance } from '../helpers/subscriptions.js';

/*
 * Amounts are typed in whole rupiah: "50.000" is fifty thousand to an Indonesian eye and fifty
 * to a decimal reader, so every amount field of the API, staff's included, refuses it with a 400
 * naming the field and saying what to write, and changes nothing. "50000", 50000 and
 * "50000.00" are accepted.
 */

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
let serial = 0;
const nextCode = () => `RP${process.pid}_${++serial}`;

/** The 400 of a misread amount: the field named, whole rupiah asked for, the digits to write. */
function expectMisread(res: HttpResult, field: string, write: string): void {
  expect(res.status, res.text).toBe(400);
  expect(res.body.type).toMatch(/validation-error/);
  const error = (res.body.errors as { field: string; message: string }[]).find((e) => e.field === field);
  expect(error, res.text).toBeDefined();
  expect(error!.message).toContain('whole rupiah');
  expect(error!.message).toContain(`write ${write}`);
}

describe.each(DATABASES)('amounts typed in rupiah (%s)', { timeout: 180_000 }, (kind) => {
  const stage = serverOnClock(kind, new Date('2027-03-01T03:00:00.000Z'));
  let writeKey: string;

  beforeAll(async () => {
    const made = await runCli(['--json', 'api-keys', 'create', '--reason', 'test: amounts', '--name', 'support-desk', '--scope', 'write'], { ...cliEnv(stage.server), BILLING_OPERATOR: 'ops-oncall' });
    writeKey = made.json.key;
  });

  const post = (path: string, body: unknown) => stage.server.api('POST', path, { body, headers: bearer(writeKey) });
  const postRaw = (path: string, rawBody: string) => stage.server.api('POST', path, { rawBody, headers: { ...bearer(writeKey), 'content-type': 'application/json' } });

  it('a staff refund of "50.000" answers 400 naming amount and changes nothing; the JSON number 50.000, "1.000.000" and "50.5" alike; "50000" and 50000 refund fifty thousand', async () => {
    const { server, user } = stage;
    const { payment } = await activeSubscription(server, user, 'pro-monthly', 'gopay');
    const path = `/admin/payments/${payment.id}/refund/`;
    const em = () => dbOf(server);
    const before = { wallet: await walletBalance(server, user), notes: await em().count(CreditNote, {}), entries: await em().count(WalletTransaction, {}) };

    expectMisread(await post(path, { reason: 'Ticket 1', amount: '50.000', direct: true }), 'amount', '50000');
    expectMisread(await postRaw(path, '{"reason": "Ticket 1", "amount": 50.000}'), 'amount', '50000');
    expectMisread(await post(path, { reason: 'Ticket 1', amount: '1.000.000' }), 'amount', '1000000');
    expectMisread(await post(path, { reason: 'Ticket 1', amount: '50,000' }), 'amount', '50000');
    const sen = await post(path, { reason: 'Ticket 1', amount: '50.5' });
    expect(sen.status, sen.text).toBe(400);
    expect(sen.body.errors).toEqual([{ field: 'amount', message: 'must be written in whole rupiah: IDR has no fraction ("50.5")' }]);
    expect((await post(path, { reason: 'Ticket 1', amount: '50000.000' })).status).toBe(400);

    const stored = await em().findOneOrFail(Payment, payment.id);
    expect(stored).toMatchObject({ status: 'settled', refundedAmount: '0.00', creditedAmount: '0.00' });
    expect({ wallet: await walletBalance(server, user), notes: await em().count(CreditNote, {}), entries: await em().count(WalletTransaction, {}) }).toEqual(before);

    const typed = await post(path, { reason: 'Ticket 1', amount: '50000', description: 'Goodwill' });
    expect(typed.status, typed.text).toBe(200);
    expect(typed.body.refund).toMatchObject({ amount: '50000.00' });
    const number = await post(path, { reason: 'Ticket 2', amount: 50000 });
    expect(number.status, number.text).toBe(200);
    expect(number.body.refund).toMatchObject({ amount: '50000.00' });
    expect((await em().findOneOrFail(Payment, payment.id)).refundedAmount).toBe('100000.00');
  });

  it("a customer's own refund of \"50.000\" answers 400 too", async () => {
    const { server, user } = stage;
    const { payment } = await activeSubscription(server, user, 'pro-monthly', 'gopay');
    expectMisread(await server.api('POST', `/payments/${payment.id}/refund/`, { auth: user, body: { amount: '50.000' } }), 'amount', '50000');
    expect((await dbOf(server).findOneOrFail(Payment, payment.id)).refundedAmount).toBe('0.00');
  });

  it('a coupon amount_off "50.000" is refused and stores nothing; "50000", 50000 and "50000.00" make fifty thousand off', async () => {
    const coupon = (amount_off: unknown, code = nextCode()) => post('/admin/coupons/', { code, name: 'Fifty', duration: 'once', reason: 'campaign', amount_off, currency: 'IDR' });
    const refused = nextCode();
    expectMisread(await coupon('50.000', refused), 'amount_off', '50000');
    expect(await dbOf(stage.server).count(Coupon, { code: refused })).toBe(0);
    for (const typed of ['50000', 50000, '50000.00']) {
      const made = await coupon(typed);
      expect(made.status, made.text).toBe(201);
      expect(made.body.amount_off).toBe('50000.00');
    }
  });

  it("a promotion code's minimum_amount, a top-up and a wallet adjustment refuse \"50.000\" alike, changing nothing", async () => {
    const { server, user } = stage;
    const base = (await post('/admin/coupons/', { code: nextCode(), name: 'Ten', duration: 'once', reason: 'campaign', percent_off: '10' })).body;
    const refusedCode = nextCode();
    expectMisread(await post('/admin/promotion-codes/', { reason: 'campaign', coupon: base.code, code: refusedCode, minimum_amount: '50.000' }), 'minimum_amount', '50000');
    expect(await dbOf(server).count(PromotionCode, { codeKey: refusedCode.toUpperCase() })).toBe(0);

    expectMisread(await server.api('POST', '/topups/', { auth: user, body: { amount: '50.000', payment_type: 'bank_transfer', bank: 'bca' } }), 'amount', '50000');
    expect(await dbOf(server).count(Topup, { user: user.id })).toBe(0);

    await fundWallet(server, user, '100000.00');
    for (const amount of ['-25.000', '25.000', '+1.000.000']) {
      expectMisread(await post(`/admin/wallets/${user.username}/adjust/`, { amount, reason: 'Ticket 3' }), 'amount', amount.replace(/[^0-9]/g, ''));
    }
    expect(await walletBalance(server, user)).toBe('100000.00');
    const debit = await post(`/admin/wallets/${user.username}/adjust/`, { amount: '-25000', reason: 'Ticket 3' });
    expect(debit.status, debit.text).toBe(200);
    expect(await walletBalance(server, user)).toBe('75000.00');
  });
});
