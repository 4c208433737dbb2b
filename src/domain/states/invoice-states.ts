import type { Invoice, InvoiceStatus } from '../../db/entities/invoice.js';
import { StateMachine } from './state-machine.js';

export type InvoiceEvent = 'pay' | 'void' | 'mark_uncollectible' | 'reopen';

export const invoiceStates = new StateMachine<InvoiceStatus, InvoiceEvent, Invoice>('invoice', {
  // A late payment of an uncollectible invoice still pays it.
  pay: { from: ['open', 'uncollectible'], to: 'paid', stamp: (i, at) => (i.paidAt = at) },
  void: { from: ['open'], to: 'void' },
  // The write-off's date for tax corrections (docs/tax.md): updated_at moves with any later change.
  mark_uncollectible: { from: ['open'], to: 'uncollectible', stamp: (i, at) => (i.uncollectibleAt = at) },
  // The payment that paid it was reversed by the gateway: it is owed again.
  reopen: { from: ['paid'], to: 'open', stamp: (i) => (i.paidAt = null) },
});
