import type { SimTransaction } from './types.js';

/** In-memory transactions, addressable by transaction_id or by order_id (the latest one). */
export class TransactionStore {
  readonly #byTransactionId = new Map<string, SimTransaction>();
  readonly #byOrderId = new Map<string, SimTransaction[]>();

  add(tx: SimTransaction): void {
    this.#byTransactionId.set(tx.transaction_id, tx);
    const list = this.#byOrderId.get(tx.order_id) ?? [];
    list.push(tx);
    this.#byOrderId.set(tx.order_id, list);
  }

  /** Path ids may be either an order_id or a transaction_id (docs/gateway.md, 'Wire details'). */
  find(id: string): SimTransaction | undefined {
    return this.#byTransactionId.get(id) ?? this.latestForOrder(id);
  }

  latestForOrder(orderId: string): SimTransaction | undefined {
    const list = this.#byOrderId.get(orderId);
    return list?.[list.length - 1];
  }

  allForOrder(orderId: string): SimTransaction[] {
    return [...(this.#byOrderId.get(orderId) ?? [])];
  }

  all(): SimTransaction[] {
    return [...this.#byTransactionId.values()];
  }

  clear(): void {
    this.#byTransactionId.clear();
    this.#byOrderId.clear();
  }
}
