import type { FilterQuery } from '@mikro-orm/core';
import { CreditNote } from '../../db/entities/credit-note.js';
import type { Invoice } from '../../db/entities/invoice.js';
import type { User } from '../../db/entities/user.js';
import type { DataContext } from '../context.js';
import { findPage, type Page, type PageRequest } from '../common/pagination.js';

export interface CreditNoteFilters {
  /** Only this user's (support staff's `billing-admin credit-notes list --user`); the API always passes the caller. */
  user?: User;
  invoiceId?: string;
}

/** Relations a listed credit note needs: its invoice (for the number) and its user (for support's username). */
export const CREDIT_NOTE_POPULATE = ['invoice', 'user'] as const;

/** Credit notes, newest first (by number within the same instant), with their invoice for its number. */
export async function listCreditNotes(ctx: Pick<DataContext, 'em'>, filters: CreditNoteFilters, page: PageRequest): Promise<Page<CreditNote>> {
  const where: FilterQuery<CreditNote> = {};
  if (filters.user) where.user = filters.user;
  if (filters.invoiceId) where.invoice = filters.invoiceId;
  return findPage(ctx.em, CreditNote, where, page, { orderBy: [{ issuedAt: 'desc' }, { number: 'desc' }], populate: CREDIT_NOTE_POPULATE });
}

/** The credit notes of one invoice, oldest first (the invoice's own view). */
export async function creditNotesOfInvoice(ctx: Pick<DataContext, 'em'>, invoice: Invoice): Promise<CreditNote[]> {
  return ctx.em.find(CreditNote, { invoice }, { orderBy: [{ issuedAt: 'asc' }, { number: 'asc' }] });
}
