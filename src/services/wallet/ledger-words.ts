import type { EntityManager } from '@mikro-orm/core';
import { CreditNoteLine } from '../../db/entities/credit-note.js';
import type { LineSubject } from '../../db/entities/invoice.js';
import type { WalletTransaction } from '../../db/entities/wallet.js';
import type { LineWords } from '../documents/line-words.js';

/*
 * NOTE: a wallet entry stores its description in English (the API's words). A page in Bahasa
 * Indonesia shows it in Bahasa through the one catalogue of line words (documents/line-words.ts):
 * an entry documented by a credit note (a plan change's unused time, a settlement nobody could
 * use) takes that note's line subject; a support adjustment without words of its own takes the
 * support's. Any other entry keeps its stored description.
 */

/** What a support adjustment says when staff give no description (adjust-wallet.ts). */
export const SUPPORT_WORDS = { credit: 'Credit from support', debit: 'Debit by support' } as const;

/** The subject of each entry of `entries` that has one, by entry id. */
export async function ledgerSubjects(em: EntityManager, entries: readonly WalletTransaction[]): Promise<Map<string, LineSubject>> {
  const subjects = new Map<string, LineSubject>();
  for (const e of entries) {
    if (e.source === 'adjustment' && e.description === SUPPORT_WORDS[e.kind]) subjects.set(e.id, { type: `support_${e.kind}` });
  }
  const documented = entries.filter((e) => !subjects.has(e.id)).map((e) => e.id);
  if (documented.length === 0) return subjects;
  const lines = await em.find(CreditNoteLine, { creditNote: { walletTransaction: { $in: documented } }, subject: { $ne: null } }, { populate: ['creditNote'], orderBy: { id: 'asc' } });
  for (const line of lines) {
    const entryId = line.creditNote.walletTransaction?.id;
    if (entryId && line.subject && !subjects.has(entryId)) subjects.set(entryId, line.subject);
  }
  return subjects;
}

/** An entry's words in the language of `words`. */
export function ledgerDescription(words: LineWords, entry: Pick<WalletTransaction, 'id' | 'description'>, subjects: ReadonlyMap<string, LineSubject>): string {
  return words.line({ description: entry.description, subject: subjects.get(entry.id) ?? null });
}
