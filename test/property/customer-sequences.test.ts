import { afterAll, beforeAll, describe, it } from 'vitest';
import { DATABASES } from '../helpers/database.js';
import {
  Cancel,
  ChangePlan,
  ChargeAgain,
  ChargeAnswerLost,
  Chargeback,
  ChargeFromWallet,
  ConcurrentCharges,
  GatewayRefund,
  LostNotification,
  Pay,
  PayLate,
  PayWithFee,
  RefundAnswerLost,
  RefundBeforeSettlement,
  RefundRefused,
  RequestRefund,
  Reverse,
  SendUsage,
  StaffCredit,
  Subscribe,
  Sync,
  TimePasses,
  TopUp,
  WrongKeyRun,
} from '../helpers/property/customer-commands.js';
import { startWorld, type World } from '../helpers/property/customer-world.js';
import { SwitchMethod } from '../helpers/property/held-codes-and-switches.js';
import { runCustomerSequences, runMoves } from '../helpers/property/run-customer-sequences.js';

/*
 * Issue 14, "Done when" 2: random customer sequences (subscribe with each payment kind, pay or
 * leave unpaid, pay late, change plan up, down and across intervals, cancel both ways, refund in
 * full or in part here and at the gateway, top up, staff credits, billing runs at random times)
 * against the real server over HTTP with the simulator; after every step the money rules hold
 * (test/helpers/property/customer-world.ts, checkMoneyRules). 300 short sequences per database,
 * always the same ones (seed 14); test/reliability/long/ runs more, longer ones, with a new seed.
 * Issue 27 adds the gateway's own moves (refund refusals, lost refund answers, chargebacks, lost
 * notifications and syncs, fee imposition, lost charge answers, a wrong server key during a
 * billing run) and, after every step, the gateway as the truth (checkMoneyRules, rule 8).
 * The cases the issue reports are kept as named sequences under the same checks.
 */
describe.each(DATABASES)('customer sequences on %s', (kind) => {
  let world: World;
  beforeAll(async () => {
    world = await startWorld(kind);
  });
  afterAll(() => world?.stop());

  describe('the cases issue 14 reports, as sequences', () => {
    it('1. upgrade left unpaid, then downgrade: no credit for what was never paid', async () => {
      await runMoves(world, [new Subscribe('p-cheap', 'bank_transfer'), new Pay(0, 'settle'), new ChangePlan('p-dear', true), new ChangePlan('p-cheap', true)]);
    });
    it('2. a full refund ends the access it paid for', async () => {
      await runMoves(world, [new Subscribe('p-dear', 'qris'), new Pay(0, 'settle'), new RequestRefund(0, null)]);
    });
    it('2. a refund after a downgrade credit gives back no more than was paid', async () => {
      await runMoves(world, [new Subscribe('p-yearly', 'qris'), new Pay(0, 'settle'), new ChangePlan('p-cheap', true), new RequestRefund(0, null)]);
    });
    it('4. one trial per user and plan, whatever changes and cancellations follow', async () => {
      await runMoves(world, [new Subscribe('p-trial', 'qris'), new ChangePlan('p-cheap', true), new Cancel(true), new Subscribe('p-trial', 'qris')]);
    });
    it('5. an old payment paid after a newer one settled, and a canceled top-up paid, go to the wallet', async () => {
      await runMoves(world, [new Subscribe('p-cheap', 'bank_transfer'), new ChargeAgain(), new Pay(0, 'settle'), new PayLate(0), new TopUp(50000, 'bank_transfer'), new Pay(0, 'cancel'), new PayLate(0)]);
    });
    it('6. refunds made at the gateway are counted once', async () => {
      await runMoves(world, [new Subscribe('p-dear', 'gopay'), new Pay(0, 'settle'), new GatewayRefund(0, 10), new GatewayRefund(0, 20), new RequestRefund(0, 30), new GatewayRefund(0, 100)]);
    });
  });

  describe('the money sequences issue 28 reports (rows 3-6, 8, 9), as sequences', () => {
    it('3. an upgrade paid while a renewal invoice is open', async () => {
      await runMoves(world, [new Subscribe('p-cheap', 'bank_transfer'), new Pay(0, 'settle'), new TimePasses(31, 0), new ChangePlan('p-dear', true), new Pay(0, 'settle'), new TimePasses(12, 0)]);
    });
    it('4. a refund that overtakes its settlement', async () => {
      await runMoves(world, [new TopUp(100000, 'bank_transfer'), new RefundBeforeSettlement(0, 100), new Subscribe('p-cheap', 'wallet')]);
    });
    it('5. a top-up spent, then reversed', async () => {
      await runMoves(world, [new TopUp(50000, 'bank_transfer'), new Pay(0, 'settle'), new Subscribe('p-cheap', 'wallet'), new Reverse(0), new TopUp(70000, 'bank_transfer'), new Pay(0, 'settle')]);
    });
    it('6. a reversed first payment repaid after an upgrade', async () => {
      await runMoves(world, [new Subscribe('p-cheap', 'bank_transfer'), new Pay(0, 'settle'), new ChangePlan('p-dear', true), new Pay(0, 'settle'), new Reverse(1), new TimePasses(20, 0), new ChargeAgain(), new Pay(0, 'settle')]);
    });
    it('8. concurrent charges of one invoice', async () => {
      await runMoves(world, [new Subscribe('p-cheap', 'bank_transfer'), new ConcurrentCharges(6), new Pay(0, 'settle'), new PayLate(0)]);
    });
    it('9. a pending change paid from the wallet', async () => {
      await runMoves(world, [new Subscribe('p-cheap', 'bank_transfer'), new Pay(0, 'settle'), new ChangePlan('p-dear', true), new StaffCredit(200000), new ChargeFromWallet()]);
    });
    // Found by the long variant with fresh seeds (2294121435, 224844754).
    it('a reversed payment charged again, then a downgrade: the reversed money is not credited as unused', async () => {
      await runMoves(world, [new Subscribe('p-yearly', 'card_3ds'), new Pay(0, 'settle'), new Reverse(0), new ChargeAgain(), new ChangePlan('p-cheap', true)]);
    });
    it('a payment refunded in part before its settlement, then reversed', async () => {
      await runMoves(world, [new Subscribe('p-cheap', 'bank_transfer'), new RefundBeforeSettlement(0, 40), new Pay(0, 'deny')]);
    });
    // Seed 201625129: a catch-up renewal for a period that is over, paid after the pass.
    it.each([0, 1])('a catch-up renewal paid after its period ended (%i h after the end): no access until the next pass renews', async (hours) => {
      await runMoves(world, [new Subscribe('p-weekly', 'bank_transfer'), new Pay(0, 'settle'), new TimePasses(14, hours), new RefundBeforeSettlement(0, 40)]);
    });
  });

  describe("the gateway's own moves (issue 27), as sequences", () => {
    it('a refund the gateway refuses changes nothing', async () => {
      await runMoves(world, [new Subscribe('p-dear', 'shopeepay'), new Pay(0, 'settle'), new RefundRefused(0, 'shopeepay_partial', 40), new RefundRefused(0, 'fault', null)]);
    });
    it('a refund whose answer is lost, retried; another found by payments sync', async () => {
      await runMoves(world, [new Subscribe('p-dear', 'gopay'), new Pay(0, 'settle'), new RefundAnswerLost(0, 10, 'retry'), new RefundAnswerLost(0, 10, 'later'), new Sync('payments')]);
    });
    it('a partial chargeback, then the rest with its notification lost, found by the customer sync', async () => {
      await runMoves(world, [new Subscribe('p-dear', 'card'), new Chargeback(0, 30, true), new Chargeback(0, null, false), new Sync('customer'), new ChargeAgain()]);
    });
    it('a Permata payment reversed with the notification lost, then payments sync', async () => {
      await runMoves(world, [new Subscribe('p-cheap', 'permata'), new Pay(0, 'settle'), new LostNotification(0, 'reverse', 'payments_sync', 100)]);
    });
    it('a settlement with the customer-imposed fee', async () => {
      await runMoves(world, [new Subscribe('p-cheap', 'qris'), new PayWithFee(0, 2500)]);
    });
    it('a card charge whose answer is lost is not charged twice', async () => {
      await runMoves(world, [new ChargeAnswerLost('subscribe', 'p-dear', 'card', true)]);
    });
    it('a billing run with a wrong server key moves no subscription to past_due', async () => {
      await runMoves(world, [new Subscribe('p-cheap', 'card'), new WrongKeyRun(31, 0, false), new WrongKeyRun(10, 0, true)]);
    });
    // Seed 14, PROPERTY_PATH "82": concurrent card charges of an invoice opened again by a
    // chargeback; the captures withdrawn and voided at the gateway (capture -> cancel) were kept
    // settled, one paying the invoice, while the others were credited to the wallet. A cancel of
    // a card capture is a void, even of one we withdrew (reverse-payment.ts isReversal).
    it('concurrent card charges after a chargeback: a voided capture is not kept as paid', async () => {
      await runMoves(world, [new Subscribe('p-dear', 'card'), new Chargeback(0, null, true), new ConcurrentCharges(4)]);
    });
    // Long seeds 15400 (PROPERTY_PATH "176:0:5:3:3") and 29971 ("15:0:6:7"): a Permata payment
    // refunded in full to the wallet, then reversed by the gateway, stayed `refunded` and the
    // wallet kept the refund; the reversal now takes the wallet refunds back.
    // Long seed 15400 (PROPERTY_PATH "543:0:1:3:6:8:8:9:8:8", replayPath "GCb:F"): a refund at the
    // gateway whose notification was lost, then a partial chargeback: the chargeback's status
    // answer lists the refund too, but only the chargeback was recorded, so sync never found the
    // refund. Refunds listed with a chargeback are recorded first now.
    it('a refund whose notification was lost, then a partial chargeback, then payments sync', async () => {
      await runMoves(world, [new Subscribe('p-cheap', 'card'), new Pay(0, 'settle'), new LostNotification(0, 'refund', 'later', 1), new Chargeback(0, 1, false), new Sync('payments')]);
    });
    it('a Permata payment refunded to the wallet, then reversed: the reversal takes the wallet credit back', async () => {
      await runMoves(world, [new Subscribe('p-cheap', 'permata'), new Pay(0, 'settle'), new RequestRefund(0, null), new Pay(0, 'deny')]);
    });
    // Long seed 2164 (PROPERTY_PATH "152:0:0:22:5:7:9:9:9:10:10:14:10:12:11", replayPath "HB/A:N"):
    // a change scheduled for the renewal applied with it, the renewal's charge failed (a wrong
    // server key), and cancel(now) voided the renewal and priced its usage again under the new
    // plan, which charges no GB: the event stood on no invoice. The voided lines are carried now.
    it('a renewal that switched to a scheduled plan, unpaid, then canceled now: its usage is billed as the old plan priced it', async () => {
      await runMoves(world, [
        new Subscribe('p-cheap', 'bank_transfer'),
        new Pay(0, 'settle'),
        new ChangePlan('p-metered', true),
        new ChangePlan('p-cheap', false, 'prop25'),
        new SendUsage(0, ['1'], 0, 'none'),
        new WrongKeyRun(31, 1, false),
        new Cancel(true),
      ]);
    });
    // Long seed 15345 (PROPERTY_PATH "215:1:4:5:5:4:5", replayPath "GBS:F"): a change with a
    // 25 % code left pending, the period's own payment reversed, then the change's payment
    // settled: the change could no longer apply and its money went to the wallet, but its paid
    // invoice kept the discount while the code was given back. A paid invoice keeps its code now.
    it('a change with a code, the first payment reversed, then the change paid: the paid invoice keeps its code', async () => {
      await runMoves(world, [new Subscribe('p-weekly', 'bank_transfer'), new Pay(0, 'settle'), new ChangePlan('p-cheap', true, 'prop25'), new Reverse(0), new Pay(0, 'settle')]);
    });
  });

  describe('codes held by unpaid payments and switches of method, as sequences', () => {
    // Both depend on fixes made beside this model: a code given back when its only payment
    // expires or is canceled unpaid, and a switch of method that leaves a subscription pending.
    it('a code typed at subscribe, its payment left to expire: the code is given back', async () => {
      await runMoves(world, [new Subscribe('p-cheap', 'bank_transfer', 'proplimited'), new Pay(0, 'expire')]);
    });
    it('a code typed at subscribe, its payment canceled: the code is given back', async () => {
      await runMoves(world, [new Subscribe('p-dear', 'gopay', 'prop25'), new Pay(0, 'cancel')]);
    });
    it('a new customer switches from GoPay to QRIS, then to a Permata account: never past_due, never told it failed', async () => {
      await runMoves(world, [new Subscribe('p-cheap', 'gopay'), new SwitchMethod('qris'), new SwitchMethod('permata'), new Pay(0, 'settle')]);
    });
  });

  it('300 random sequences keep every money rule after every step', { timeout: 600_000 }, async () => {
    await runCustomerSequences(world, { numRuns: Number(process.env.PROPERTY_RUNS ?? 300), maxCommands: 8, seed: 14 });
  });
});
