import { User } from '../../db/entities/user.js';
import { NotFoundError } from '../../domain/errors.js';
import { completeTaxProfile, parseTaxProfile, type TaxProfile, type TaxProfileInput } from '../../domain/tax-profile.js';
import type { DataContext } from '../context.js';

/** The user's tax profile (GET /tax-profile/); 404 until one is saved. */
export async function getTaxProfile(ctx: DataContext, userId: string): Promise<TaxProfile> {
  const user = await ctx.em.findOneOrFail(User, { id: userId }, { fields: ['taxProfile'] });
  const profile = completeTaxProfile(user.taxProfile);
  if (!profile) throw new NotFoundError('Tax profile');
  return profile;
}

/**
 * Replaces the user's tax profile (PUT /tax-profile/). Validated whole before anything is
 * written; invoices already issued keep the copy they were made with.
 */
export async function saveTaxProfile(ctx: DataContext, userId: string, input: TaxProfileInput): Promise<TaxProfile> {
  const profile = parseTaxProfile(input);
  await ctx.em.nativeUpdate(User, { id: userId }, { taxProfile: profile, updatedAt: ctx.clock.now() });
  return profile;
}
