import { CreditNote } from '../../db/entities/credit-note.js';
import type { User } from '../../db/entities/user.js';
import { NotFoundError } from '../../domain/errors.js';
import type { DataContext } from '../context.js';

/** Relations the credit note's detail view needs. */
export const CREDIT_NOTE_DETAIL_POPULATE = ['lines', 'invoice'] as const;

/** One of the user's credit notes with its lines; another user's credit note is not found. */
export async function getCreditNote(ctx: Pick<DataContext, 'em'>, user: User, id: string): Promise<CreditNote> {
  const note = await ctx.em.findOne(CreditNote, { id, user }, { populate: CREDIT_NOTE_DETAIL_POPULATE });
  if (!note) throw new NotFoundError('Credit note');
  return note;
}
