import type { Command } from 'commander';
import { serializePromotionCode } from '../../src/http/coupon-serializers.js';
import { cliActor } from '../../src/services/audit/actor.js';
import { findPromotionCode } from '../../src/services/coupons/find-coupon.js';
import { createPromotionCode, listPromotionCodes, setPromotionCodeActive } from '../../src/services/coupons/manage-promotion-codes.js';
import { withReason } from '../audit-trail.js';
import { describeRecord } from '../lookups.js';
import { globalOptions, output, table, withServices } from '../runtime.js';
import { activeFilter, numberOption, offText, pageOptions, redeemedText } from './coupon-options.js';

/*
 * `billing-admin promotion-codes …`: the staff API's /admin/promotion-codes/ from the command
 * line, the same use cases, recorded in the audit trail with the operator as actor.
 */

type PromotionCodeWire = ReturnType<typeof serializePromotionCode>;

const codeRow = (p: PromotionCodeWire) => ({
  code: p.code,
  coupon: p.coupon.code,
  off: offText(p.coupon),
  redeemed: redeemedText(p),
  expires_at: p.expires_at ?? '',
  first_time_only: p.first_time_only ? 'yes' : '',
  minimum_amount: p.minimum_amount ?? '',
  customer_id: p.customer_id ?? '',
  active: p.active && p.coupon.active ? 'yes' : p.active ? 'no (coupon archived)' : 'no',
});

/** One promotion code in the human form: its coupon by code and terms, not as nested JSON. */
const describeCode = (p: PromotionCodeWire) => describeRecord({ ...p, coupon: `${p.coupon.code} (${offText(p.coupon)}, ${p.coupon.duration}${p.coupon.active ? '' : ', archived'})` });

interface CreateOptions {
  code: string;
  coupon: string;
  maxRedemptions?: string;
  expiresAt?: string;
  firstTimeOnly?: boolean;
  minimumAmount?: string;
  customer?: string;
  reason: string;
}

export function registerPromotionCodeCommands(program: Command): void {
  const codes = program.command('promotion-codes').description('promotion codes: what customers type to redeem a coupon (matched in any case)');

  withReason(
    codes
      .command('create')
      .description('make a promotion code of an active coupon')
      .requiredOption('--code <code>', 'what customers type, letters, digits, _ or -; unique in any case')
      .requiredOption('--coupon <coupon>', "the coupon's code or id")
      .option('--max-redemptions <n>', 'how many times this code may be redeemed')
      .option('--expires-at <date-time>', 'no redemption after this instant (2027-01-31T23:59:59+07:00)')
      .option('--first-time-only', 'only for a customer who has never paid an invoice')
      .option('--minimum-amount <amount>', 'the least first invoice (price x quantity, before discount and tax)')
      .option('--customer <customer>', 'only this customer may redeem it (id, username or ext:<external_id>)'),
  ).action(async (opts: CreateOptions, cmd: Command) => {
    const made = await withServices((s) =>
      createPromotionCode(s, cliActor(), {
        code: opts.code,
        coupon: opts.coupon,
        maxRedemptions: numberOption(opts.maxRedemptions),
        expiresAt: opts.expiresAt,
        firstTimeOnly: opts.firstTimeOnly,
        minimumAmount: opts.minimumAmount,
        customer: opts.customer,
        reason: opts.reason,
      }),
    );
    const shown = serializePromotionCode(made);
    output(globalOptions(cmd), shown, () => `Created promotion code ${shown.code} (${shown.id}) of coupon ${shown.coupon.code}: ${offText(shown.coupon)}.`);
  });

  codes
    .command('list')
    .description('list promotion codes, newest first')
    .option('--coupon <coupon>', "only this coupon's codes (code or id)")
    .option('--active', 'only active codes')
    .option('--inactive', 'only deactivated codes')
    .option('--page <n>', 'page number', '1')
    .option('--page-size <n>', 'codes per page (at most 100)', '50')
    .action(async (opts: { coupon?: string; active?: boolean; inactive?: boolean; page: string; pageSize: string }, cmd: Command) => {
      const page = pageOptions(opts);
      const active = activeFilter(opts.active, opts.inactive, '--inactive');
      const found = await withServices((s) => listPromotionCodes(s, { coupon: opts.coupon, active }, page));
      const rows = found.items.map(serializePromotionCode);
      output(globalOptions(cmd), { count: found.count, results: rows }, () =>
        `${table(rows.map(codeRow), ['code', 'coupon', 'off', 'redeemed', 'expires_at', 'first_time_only', 'minimum_amount', 'customer_id', 'active'])}\n${found.count} promotion code${found.count === 1 ? '' : 's'}`,
      );
    });

  codes
    .command('show <code>')
    .description('show a promotion code (code in any case, or id)')
    .action(async (ref: string, _opts, cmd: Command) => {
      const shown = serializePromotionCode(await withServices((s) => findPromotionCode(s, ref)));
      output(globalOptions(cmd), shown, () => describeCode(shown));
    });

  for (const [verb, active] of [['activate', true], ['deactivate', false]] as const) {
    withReason(
      codes
        .command(`${verb} <code>`)
        .description(active ? 'let a code be redeemed again (not a code of an archived coupon)' : 'stop a code being redeemed; subscriptions keep their discounts'),
    ).action(async (ref: string, opts: { reason: string }, cmd: Command) => {
      const { shown, was } = await withServices(async (s) => {
        const before = (await findPromotionCode(s, ref)).active;
        return { was: before, shown: serializePromotionCode(await setPromotionCodeActive(s, cliActor(), ref, active, opts.reason)) };
      });
      output(globalOptions(cmd), shown, () =>
        was === active ? `Promotion code ${shown.code} was already ${active ? 'active' : 'inactive'}; nothing changed.` : `${active ? 'Activated' : 'Deactivated'} promotion code ${shown.code}.`,
      );
    });
  }
}
