import { CreditNote } from '../../db/entities/credit-note.js';
import type { User } from '../../db/entities/user.js';
import { NotFoundError } from '../../domain/errors.js';
import type { DataContext } from '../context.js';

/** One of the user's credit notes with its lines; another user's credit note is not found. */
export async function getCreditNote(ctx: Pick<DataContext, 'em'>, user: User, id: string): Promise<CreditNote> {
  const note = await ctx.em.findOne(CreditNote, { id, user }, { populate: ['lines', 'invoice'] });
  if (!note) throw new NotFoundError('Credit note');
  return note;
}
