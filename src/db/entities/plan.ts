import type { TaxBehavior } from '../../domain/tax.js';
import type { PlanCharge } from '../../domain/usage/charge-models.js';
import { EntitySchema, type Opt } from '@mikro-orm/core';
import { createdAtProperty, idProperty, moneyProperty, updatedAtProperty } from './common.js';

export type IntervalUnit = 'day' | 'week' | 'month';
export type PlanStatus = 'active' | 'inactive' | 'archived';

export class Plan {
  id!: string;
  name!: string;
  slug!: string;
  description = '';
  price!: string;
  currency = 'IDR';
  interval = 1;
  intervalUnit: IntervalUnit = 'month';
  trialPeriodDays = 0;
  /** Paid cycles after which the subscription expires; 0 = unlimited. */
  maxCycles = 0;
  status: PlanStatus = 'active';
  features: Record<string, unknown> = {};
  sortOrder = 0;
  /** How PPN applies to the price when the seller is a PKP (src/domain/tax.ts). */
  taxBehavior: TaxBehavior = 'none';
  /** Seats: the price is per unit and a subscription pays price × quantity. */
  perUnit: Opt<boolean> = false;
  /** Usage charges billed in arrears (docs/usage.md); empty for a plan of fixed prices only. */
  charges: Opt<PlanCharge[]> = [];
  createdAt!: Date;
  updatedAt!: Date;
}

export const PlanSchema = new EntitySchema<Plan>({
  class: Plan,
  tableName: 'plans',
  indexes: [{ properties: ['status', 'sortOrder'] }],
  properties: {
    id: idProperty,
    name: { type: 'string', length: 200 },
    slug: { type: 'string', length: 100, unique: true },
    description: { type: 'text', default: '' },
    price: moneyProperty,
    currency: { type: 'string', length: 3 },
    interval: { type: 'integer' },
    intervalUnit: { type: 'string', length: 10 },
    trialPeriodDays: { type: 'integer', default: 0 },
    maxCycles: { type: 'integer', default: 0 },
    status: { type: 'string', length: 10 },
    features: { type: 'json' },
    sortOrder: { type: 'integer', default: 0 },
    taxBehavior: { type: 'string', length: 10, default: 'none' },
    perUnit: { type: 'boolean', default: false },
    charges: { type: 'json', default: '[]' },
    createdAt: createdAtProperty,
    updatedAt: updatedAtProperty,
  },
});
