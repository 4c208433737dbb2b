import type { LineLabels } from './line-labels.js';

export const LINES_EN_US: LineLabels = {
  firstPeriod: (plan, count, unit) => `${plan} (first ${count} ${unit}${count === 1 ? '' : 's'})`,
  period: (plan, start, end) => `${plan} (${start} to ${end})`,
  unusedTime: (plan) => `Unused time on ${plan}`,
  unusedTimeMoved: (plan, to) => `Unused time on ${plan} after moving to ${to}`,
  remainingTime: (plan) => `Remaining time on ${plan}`,
  usage: (metric, units) => `Usage of ${metric}: ${units}`,
  newPeriod: (plan) => `${plan} (new period)`,
  during: (words, start, end) => `${words}, ${start} to ${end}`,
  refund: (refund, order, invoice) => `Refund ${refund} of payment ${order} (invoice ${invoice})`,
  unusableSettlement: (order, invoice, why) => `Payment ${order} could not be used${why ? ` (${why})` : ''} (invoice ${invoice}): credited to the wallet`,
  periodPassed: (order, invoice, start, end) => `Payment ${order} arrived after its period ${start} to ${end} had ended (invoice ${invoice}): credited to the wallet`,
  supportCredit: 'Credit from support',
  supportDebit: 'Debit by support',
  unusableWhy: {
    invoice_already_paid: 'its invoice was already paid',
    invoice_void: 'its invoice was void',
    subscription_ended: 'its subscription had ended',
    plan_change_dropped: 'its plan change was dropped',
    topup_canceled: 'its top-up was canceled',
    period_passed: 'its period had ended',
  },
  chargeback: (order, invoice, total) => `Chargeback of payment ${order} by the card's issuer (invoice ${invoice}), ${total} in all`,
};
