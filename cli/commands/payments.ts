import type { Command } from 'commander';
import { Payment, type PaymentStatus } from '../../src/db/entities/payment.js';
import { NotFoundError } from '../../src/domain/errors.js';
import { Subscription } from '../../src/db/entities/subscription.js';
import { serializePayment, serializeRefund, serializeSubscription, serializeWebhookLog } from '../../src/http/serializers.js';
import { ownersOf, serializeAdminRefund } from '../../src/http/admin-serializers.js';
import { paymentStatusCheck, type PaymentStatusCheck } from '../../src/services/payments/check-payment-status.js';
import { cliActor } from '../../src/services/audit/actor.js';
import { refundByStaff } from '../../src/services/refunds/staff-refund.js';
import { reconcilePayments, type ReconcileItem } from '../../src/services/gateway-events/reconcile-payments.js';
import { reconcileTrialCards } from '../../src/services/subscriptions/reconcile-trial-cards.js';
import { findStaffPayment, refundsOfPayment } from '../../src/services/staff-queries/staff-lookups.js';
import { listStaffPayments } from '../../src/services/staff-queries/staff-lists.js';
import { describeRecord, registerList, ownedRecord } from '../lookups.js';
import { startProgress } from '../progress.js';
import { CliFailure, cliConfig, EXIT, exitCodeFor, globalOptions, note, output, table, withServices } from '../runtime.js';
import { parseLimit, parseTime } from './webhooks.js';

const STATUSES = [
  'pending', 'settled', 'failed', 'canceled', 'expired', 'refunded', 'partially_refunded', 'reversed', 'charged_back',
] as const satisfies readonly PaymentStatus[];

/** The gateway's answer, or why there is none: unreachable, or refusing us (the exit status says which). */
type GatewayView = { check: PaymentStatusCheck; error: null } | { check: null; error: { code: number; message: string } };

/** Asks the gateway about the payment; its failures are reported beside the local record, not thrown. */
async function askGateway(services: Parameters<typeof paymentStatusCheck>[0], payment: Payment): Promise<GatewayView> {
  try {
    return { check: await paymentStatusCheck(services, payment), error: null };
  } catch (err) {
    const failure = exitCodeFor(err);
    if (failure.code !== EXIT.unavailable) throw err;
    return { check: null, error: failure };
  }
}

/** The local record and the gateway's answer side by side, one row each. */
function sideBySide(payment: ReturnType<typeof serializePayment>, gateway: GatewayView): string {
  const local = { source: 'local', status: payment.status, transaction_id: payment.transaction_id, fraud_status: payment.fraud_status, gross_amount: payment.gross_amount };
  if (!gateway.check) return `${table([local], Object.keys(local))}\ngateway unreachable: ${gateway.error.message}`;
  const g = gateway.check.gateway_status;
  const remote = { source: 'gateway', status: g.transaction_status, transaction_id: g.transaction_id, fraud_status: g.fraud_status, gross_amount: g.gross_amount, status_code: g.status_code };
  return table([local, remote], Object.keys(remote));
}

/** What the refund did to the subscription the payment paid for, in one line. */
function subscriptionLine(sub: ReturnType<typeof serializeSubscription>): string {
  if (sub.status === 'canceled') {
    return `Subscription ${sub.id} is canceled${sub.canceled_at ? ` since ${sub.canceled_at}` : ''} (${sub.cancel_reason ?? 'no reason recorded'}).`;
  }
  return `Subscription ${sub.id} is kept: ${sub.status}${sub.current_period_end ? ` until ${sub.current_period_end}` : ''}.`;
}

function serializeItem(item: ReconcileItem) {
  return {
    kind: item.kind,
    id: item.id,
    order_id: item.orderId,
    status_before: item.statusBefore,
    status_after: item.statusAfter,
    gateway_status: item.gatewayStatus,
    result: item.result,
    changes: item.changes,
    error: item.error,
    webhook_log: item.log ? serializeWebhookLog(item.log) : null,
  };
}

export function registerPaymentCommands(program: Command): void {
  const payments = program.command('payments').description('payments and top-ups');

  registerList<Payment>(payments, {
    noun: 'payments',
    statuses: STATUSES,
    extra: ['orderId'],
    list: listStaffPayments,
    serialize: serializePayment,
    columns: ['order_id', 'username', 'status', 'payment_type', 'gross_amount', 'currency', 'refunded_amount', 'paid_at', 'created_at'],
  });

  payments
    .command('show <id_or_order_id>')
    .description(
      "show any user's subscription payment as the API does (by id or order id; unknown: exit 4); with --gateway, " +
        "beside the gateway's status (read-only; an unreachable gateway is reported and exits 5)",
    )
    .option('--gateway', "also ask the gateway for the payment's status")
    .action(async (ref: string, opts: { gateway?: boolean }, cmd: Command) => {
      const { shown, refunds, gateway } = await withServices(async (s) => {
        const payment = await findStaffPayment(s, ref);
        const refunds = (await refundsOfPayment(s, payment)).map(serializeRefund);
        return { shown: await ownedRecord(s.em, payment, serializePayment), refunds, gateway: opts.gateway ? await askGateway(s, payment) : null };
      });
      // As the staff API's payment detail: its refunds, and `gateway` when asked (`gateway_error` when it did not answer).
      const json = { ...shown, refunds, ...(gateway?.check ? { gateway: gateway.check } : {}), ...(gateway?.error ? { gateway_error: gateway.error.message } : {}) };
      output(globalOptions(cmd), json, () =>
        [
          describeRecord(shown),
          ...(refunds.length ? [`\nRefunds:\n${table(refunds, ['refund_key', 'amount', 'status', 'destination', 'method'])}`] : []),
          ...(gateway ? [`\n${sideBySide(shown, gateway)}`] : []),
        ].join('\n'),
      );
      if (gateway?.error) {
        note(`error: the gateway did not answer: ${gateway.error.message}`);
        process.exitCode = gateway.error.code;
      }
    });

  payments
    .command('sync')
    .description(
      'reconcile with the gateway: ask it for every payment and top-up that is not final (pending, or charge outcome unknown), ' +
        'and for those settled within RECONCILE_LOOKBACK_DAYS (a reversal, refund or chargeback whose notification was lost), ' +
        'and for every trial card pre-authorisation (CARD-…) not yet decided or that may still hold the card (starting or canceling the trial, releasing the hold), ' +
        'and apply what it says through the webhook pipeline (webhook logs with source sync); settled ones that did not change are only counted',
    )
    .option('--since <time>', 'only those created at or after this ISO 8601 time')
    .option('--limit <n>', 'at most this many, oldest first')
    .option('--dry-run', 'ask the gateway and say what would happen, change nothing')
    .action(async (opts, cmd: Command) => {
      const input = { since: parseTime(opts.since, '--since'), limit: parseLimit(opts.limit), dryRun: Boolean(opts.dryRun) };
      const progress = startProgress();
      const report = (item: ReconcileItem, i: number, total: number) =>
        progress.update(i + 1, total, `${item.orderId}: gateway ${item.gatewayStatus ?? '?'}, ${item.statusBefore} -> ${item.statusAfter} (${item.result})`);
      const all = await withServices(async (s) => {
        const orders = await reconcilePayments(s, input, report);
        // Then the trial cards' holds, which have no payment of their own, within what is left of --limit.
        const left = input.limit === undefined ? undefined : Math.max(0, input.limit - orders.length);
        return [...orders, ...(left === 0 ? [] : await reconcileTrialCards(s, { ...input, limit: left }, report))];
      }).finally(() => progress.finish());
      // A settled payment the gateway still holds as we recorded it is only counted: a daily run over
      // months of them would bury the ones that matter. A trial card hold already released is left out.
      const unchanged = all.filter((i) => i.result === 'unchanged' && i.kind !== 'card_check').length;
      const items = all.filter((i) => i.result !== 'unchanged');
      const changed = items.filter((i) => i.changes.length > 0);
      const lookedBack = `${unchanged} settled within the last ${cliConfig().reconcileLookbackDays} days unchanged.`;
      output(globalOptions(cmd), { dry_run: input.dryRun, count: items.length, changed: changed.length, unchanged, results: items.map(serializeItem) }, () =>
        items.length === 0
          ? `Nothing to reconcile: no pending payments or top-ups, and ${lookedBack}`
          : `${table(
              items.map((i) => ({
                kind: i.kind,
                order_id: i.orderId,
                gateway: i.gatewayStatus,
                before: i.statusBefore,
                after: i.statusAfter,
                result: i.result,
                detail: i.error ?? i.changes.join('; '),
              })),
              ['kind', 'order_id', 'gateway', 'before', 'after', 'result', 'detail'],
            )}\n${changed.length} of ${items.length} changed; ${lookedBack}`,
      );
      if (items.some((i) => i.result === 'gateway_error')) process.exitCode = EXIT.unavailable;
      else if (!input.dryRun && items.some((i) => i.result === 'failed')) process.exitCode = EXIT.checkFailed;
    });

  payments
    .command('refund <order_id>')
    .description(
      'support staff: refund a settled payment by its order id, bounded only by what is refundable ' +
        '(gross - refunded - credited); unless --keep-subscription, the subscription it paid for is canceled now (cancel_reason refunded)',
    )
    .option('--amount <amount>', 'how much (default: all that is refundable)')
    .requiredOption('--reason <reason>', 'why; kept in the audit trail (the customer never sees it)')
    .option('--description <text>', 'what the customer is told about the refund (kept with it)')
    .option('--keep-subscription', 'refund without ending the subscription the payment paid for')
    .option('--direct', "use the gateway's direct refund (gateway-refunded payment types only)")
    .action(async (orderId: string, opts, cmd: Command) => {
      if (!String(opts.reason).trim()) throw new CliFailure('--reason may not be empty', EXIT.usage);
      const { payment, refund, subscription } = await withServices(async (s) => {
        const found = await s.em.findOne(Payment, { orderId });
        if (!found) throw new NotFoundError('Payment');
        const result = await refundByStaff(s, cliActor(), found, {
          amount: opts.amount,
          reason: opts.reason,
          description: opts.description,
          direct: Boolean(opts.direct),
          keepSubscription: Boolean(opts.keepSubscription),
        });
        // The subscription as the refund left it, read anew: support staff must see whether it ended.
        const subscriptionId = result.payment.subscription?.id;
        const sub = subscriptionId ? await s.em.fork().findOne(Subscription, subscriptionId, { populate: ['plan', 'pendingPlan', 'user'] }) : null;
        // The staff API's refund answer, field for field (its serializers, the owner included).
        const owner = await ownersOf(s.em, [result.payment]);
        return {
          payment: { ...serializePayment(result.payment), user: owner(result.payment) },
          refund: serializeAdminRefund(result.refund, result.payment, owner(result.payment)),
          subscription: sub ? serializeSubscription(sub) : null,
        };
      });
      output(globalOptions(cmd), { payment, refund, subscription }, () =>
        refund.status === 'pending'
          ? `Refund ${refund.refund_key} of ${refund.amount} ${payment.currency} of ${payment.order_id} sent, but the gateway's answer was lost: ` +
            `pending until the gateway confirms it (its notification, or payments sync); nothing else has changed yet.`
          : `Refunded ${refund.amount} ${payment.currency} of ${payment.order_id} to the ${refund.destination} (${refund.refund_key}, ${refund.status}); ` +
            `payment ${payment.status}, refunded ${payment.refunded_amount}, credited ${payment.credited_amount}.` +
            (subscription ? `\n${subscriptionLine(subscription)}` : ''),
      );
    });
}
