import type { Command } from 'commander';
import { serializeCoupon } from '../../src/http/coupon-serializers.js';
import { cliActor } from '../../src/services/audit/actor.js';
import { findCoupon } from '../../src/services/coupons/find-coupon.js';
import { archiveCoupon, createCoupon, listCoupons } from '../../src/services/coupons/manage-coupons.js';
import { withReason } from '../audit-trail.js';
import { describeRecord } from '../lookups.js';
import { globalOptions, output, table, withServices } from '../runtime.js';
import { activeFilter, collect, numberOption, offText, pageOptions, redeemedText } from './coupon-options.js';

/*
 * `billing-admin coupons …`: the staff API's /admin/coupons/ from the command line, the same
 * use cases, recorded in the audit trail with the operator as actor (docs/staff.md).
 */

type CouponWire = ReturnType<typeof serializeCoupon>;

const couponRow = (c: CouponWire) => ({
  code: c.code,
  name: c.name,
  off: offText(c),
  duration: c.duration === 'repeating' ? `${c.duration_in_cycles} cycles` : c.duration,
  redeemed: redeemedText(c),
  redeem_by: c.redeem_by ?? '',
  plans: c.plans?.join(',') ?? 'all',
  status: c.archived_at ? `archived ${c.archived_at}` : 'active',
});

interface CreateOptions {
  code: string;
  name: string;
  percentOff?: string;
  amountOff?: string;
  currency?: string;
  duration: string;
  durationInCycles?: string;
  maxRedemptions?: string;
  redeemBy?: string;
  plan?: string[];
  reason: string;
}

export function registerCouponCommands(program: Command): void {
  const coupons = program.command('coupons').description('coupons: the terms of a discount (named by code or id); customers redeem them through promotion codes');

  withReason(
    coupons
      .command('create')
      .description("make a coupon; its terms never change (archive it and make another)")
      .requiredOption('--code <code>', 'its unique code, letters, digits, _ or - (LAUNCH25)')
      .requiredOption('--name <name>', 'what staff call it')
      .option('--percent-off <pct>', 'percentage off, above 0 and at most 100 (25 or 12.5)')
      .option('--amount-off <amount>', 'amount off each covered invoice, in --currency')
      .option('--currency <code>', 'the currency of --amount-off (IDR)')
      .requiredOption('--duration <once|repeating|forever>', 'which billed periods it covers')
      .option('--duration-in-cycles <n>', 'with repeating: how many billed periods')
      .option('--max-redemptions <n>', 'how many times it may be redeemed in all')
      .option('--redeem-by <date-time>', 'no redemption after this instant (2027-01-31T23:59:59+07:00)')
      .option('--plan <slug>', 'a plan it applies to (repeat for more; default every plan)', collect),
  ).action(async (opts: CreateOptions, cmd: Command) => {
    const made = await withServices((s) =>
      createCoupon(s, cliActor(), {
        code: opts.code,
        name: opts.name,
        percentOff: opts.percentOff,
        amountOff: opts.amountOff,
        currency: opts.currency,
        duration: opts.duration,
        durationInCycles: numberOption(opts.durationInCycles),
        maxRedemptions: numberOption(opts.maxRedemptions),
        redeemBy: opts.redeemBy,
        plans: opts.plan,
        reason: opts.reason,
      }),
    );
    const shown = serializeCoupon(made);
    output(globalOptions(cmd), shown, () => `Created coupon ${shown.code} (${shown.id}): ${offText(shown)}, ${couponRow(shown).duration}.`);
  });

  coupons
    .command('list')
    .description('list coupons, newest first')
    .option('--active', 'only coupons that can still be redeemed')
    .option('--archived', 'only archived coupons')
    .option('--page <n>', 'page number', '1')
    .option('--page-size <n>', 'coupons per page (at most 100)', '50')
    .action(async (opts: { active?: boolean; archived?: boolean; page: string; pageSize: string }, cmd: Command) => {
      const page = pageOptions(opts);
      const active = activeFilter(opts.active, opts.archived, '--archived');
      const found = await withServices((s) => listCoupons(s, { active }, page));
      const rows = found.items.map(serializeCoupon);
      output(globalOptions(cmd), { count: found.count, results: rows }, () =>
        `${table(rows.map(couponRow), ['code', 'name', 'off', 'duration', 'redeemed', 'redeem_by', 'plans', 'status'])}\n${found.count} coupon${found.count === 1 ? '' : 's'}`,
      );
    });

  coupons
    .command('show <coupon>')
    .description('show a coupon (code or id)')
    .action(async (ref: string, _opts, cmd: Command) => {
      const shown = serializeCoupon(await withServices((s) => findCoupon(s, ref)));
      output(globalOptions(cmd), shown, () => describeRecord(shown));
    });

  withReason(coupons.command('archive <coupon>').description('archive a coupon: it and its promotion codes can no longer be redeemed; subscriptions keep their discounts')).action(
    async (ref: string, opts: { reason: string }, cmd: Command) => {
      const shown = serializeCoupon(await withServices((s) => archiveCoupon(s, cliActor(), ref, opts.reason)));
      output(globalOptions(cmd), shown, () => `Archived coupon ${shown.code} (${shown.id}) at ${shown.archived_at}.`);
    },
  );
}
