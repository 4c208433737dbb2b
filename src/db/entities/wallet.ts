import { EntitySchema } from '@mikro-orm/core';
import { createdAtProperty, idProperty, moneyProperty, updatedAtProperty, zeroMoneyProperty } from './common.js';
import { User } from './user.js';

export type WalletTransactionKind = 'credit' | 'debit';
export type WalletTransactionSource = 'topup' | 'refund' | 'proration' | 'payment' | 'adjustment';

export class Wallet {
  id!: string;
  user!: User;
  /** Always equals the sum of the ledger; changed only by src/services/wallet/wallet-ledger.ts (postWalletEntry, postWalletDebits). */
  balance!: string;
  currency!: string;
  isActive = true;
  /** How many entries its ledger holds: the next entry's position (wallet-ledger.ts). */
  entries = 0;
  createdAt!: Date;
  updatedAt!: Date;
}

export class WalletTransaction {
  id!: string;
  wallet!: Wallet;
  kind!: WalletTransactionKind;
  amount!: string;
  balanceAfter!: string;
  source!: WalletTransactionSource;
  /** What caused it (top-up, refund, payment id…); unique per source so nothing is posted twice. */
  referenceId: string | null = null;
  description = '';
  /**
   * NOTE: the entry's place in its wallet's ledger (1, 2, 3 …), given under the wallet's row
   * lock. The ledger's order is this, not created_at: a billing run at a future --at stamps its
   * entries ahead of those written after it, and wallet verify must still chain them.
   */
  position = 0;
  createdAt!: Date;
}

export const WalletSchema = new EntitySchema<Wallet>({
  class: Wallet,
  tableName: 'wallets',
  properties: {
    id: idProperty,
    user: { kind: 'm:1', entity: () => User, unique: true },
    balance: zeroMoneyProperty,
    currency: { type: 'string', length: 3 },
    isActive: { type: 'boolean', default: true },
    entries: { type: 'integer', default: 0 },
    createdAt: createdAtProperty,
    updatedAt: updatedAtProperty,
  },
});

export const WalletTransactionSchema = new EntitySchema<WalletTransaction>({
  class: WalletTransaction,
  tableName: 'wallet_transactions',
  uniques: [{ properties: ['source', 'referenceId'] }],
  indexes: [{ properties: ['wallet', 'createdAt'] }, { properties: ['wallet', 'position'] }],
  properties: {
    id: idProperty,
    wallet: { kind: 'm:1', entity: () => Wallet },
    kind: { type: 'string', length: 10 },
    amount: moneyProperty,
    balanceAfter: moneyProperty,
    source: { type: 'string', length: 20 },
    referenceId: { type: 'string', length: 100, nullable: true },
    description: { type: 'string', length: 500, default: '' },
    position: { type: 'integer', default: 0 },
    createdAt: createdAtProperty,
  },
});
