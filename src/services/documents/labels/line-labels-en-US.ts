import type { LineLabels } from './line-labels.js';

export const LINES_EN_US: LineLabels = {
  firstPeriod: (plan, count, unit) => `${plan} (first ${count} ${unit}${count === 1 ? '' : 's'})`,
  period: (plan, start, end) => `${plan} (${start} to ${end})`,
  unusedTime: (plan) => `Unused time on ${plan}`,
  remainingTime: (plan) => `Remaining time on ${plan}`,
  newPeriod: (plan) => `${plan} (new period)`,
  refund: (refund, order, invoice) => `Refund ${refund} of payment ${order} (invoice ${invoice})`,
  chargeback: (order, invoice, total) => `Chargeback of payment ${order} by the card's issuer (invoice ${invoice}), ${total} in all`,
};
