import type { Command } from 'commander';
import type { Subscription, SubscriptionStatus } from '../../src/db/entities/subscription.js';
import { serializeSubscription } from '../../src/http/serializers.js';
import { getStaffSubscription } from '../../src/services/staff-queries/staff-lookups.js';
import { listStaffSubscriptions } from '../../src/services/staff-queries/staff-lists.js';
import { syncAllSubscriptions, type SyncAllResult } from '../../src/services/subscriptions/sync-subscription.js';
import { describeRecord, registerList, ownedRecord } from '../lookups.js';
import { startProgress } from '../progress.js';
import { EXIT, globalOptions, output, table, withServices } from '../runtime.js';

const STATUSES = ['pending', 'trialing', 'active', 'paused', 'past_due', 'canceled', 'expired'] as const satisfies readonly SubscriptionStatus[];

export function registerSubscriptionCommands(program: Command): void {
  const subscriptions = program.command('subscriptions').description('subscriptions');

  registerList<Subscription>(subscriptions, {
    noun: 'subscriptions',
    statuses: STATUSES,
    extra: [],
    list: listStaffSubscriptions,
    serialize: serializeSubscription,
    columns: ['id', 'username', 'status', 'payment_type', 'current_period_end', 'next_billing_date', 'cancel_reason', 'created_at'],
  });

  subscriptions
    .command('show <id>')
    .description("show any user's subscription as the API does (unknown id: exit 4)")
    .action(async (id: string, _opts, cmd: Command) => {
      const shown = await withServices(async (s) => {
        const sub = await getStaffSubscription(s, id);
        return ownedRecord(s.em, sub, serializeSubscription);
      });
      output(globalOptions(cmd), shown, () => describeRecord(shown));
    });

  subscriptions
    .command('sync')
    .description(
      'sync every subscription that has a pending gateway payment with the gateway: its answers are applied like ' +
        'webhook notifications (webhook logs with source sync)',
    )
    .option('--user <user>', 'only this user (username or id)')
    .action(async (opts: { user?: string }, cmd: Command) => {
      const progress = startProgress();
      const items = await withServices((s) =>
        syncAllSubscriptions(s, { user: opts.user }, (item, i, total) =>
          progress.update(i + 1, total, `${item.subscription_id} (${item.username}): ${item.status_before} -> ${item.status_after} (${item.result})`),
        ),
      ).finally(() => progress.finish());
      const changed = items.filter((i) => i.status_before !== i.status_after);
      output(globalOptions(cmd), { count: items.length, changed: changed.length, results: items }, () => human(items, changed.length));
      if (items.some((i) => i.result === 'gateway_error')) process.exitCode = EXIT.unavailable;
      else if (items.some((i) => i.result === 'failed')) process.exitCode = EXIT.checkFailed;
    });
}

function human(items: SyncAllResult[], changed: number): string {
  if (items.length === 0) return 'Nothing to sync: no subscription has a pending gateway payment.';
  const rows = items.map((i) => ({
    subscription: i.subscription_id,
    user: i.username,
    before: i.status_before,
    after: i.status_after,
    payments: i.payments.map((p) => `${p.order_id}:${p.gateway_status ?? 'unknown'}`).join(' '),
    result: i.result,
    detail: i.error ?? '',
  }));
  return `${table(rows, ['subscription', 'user', 'before', 'after', 'payments', 'result', 'detail'])}\n${changed} of ${items.length} changed.`;
}
