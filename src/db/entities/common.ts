import { randomUUID } from 'node:crypto';
import { MoneyType } from '../types/money-type.js';

/** Property definitions every table shares: a UUID key and creation/update stamps. */
export const idProperty = { type: 'uuid', primary: true, onCreate: () => randomUUID() } as const;

export const createdAtProperty = {
  type: 'Date',
  // onCreate fills only a null value: use cases may stamp creation from their clock (billing
  // runs at --at time); otherwise it is now.
  onCreate: () => new Date(),
} as const;

export const updatedAtProperty = {
  type: 'Date',
  onCreate: () => new Date(),
  onUpdate: () => new Date(),
} as const;

export const moneyProperty = { type: MoneyType } as const;

/** A money column that starts at zero. Set on create, not as a column default: the stored form differs per dialect. */
export const zeroMoneyProperty = {
  type: MoneyType,
  onCreate: () => '0.00',
} as const;
