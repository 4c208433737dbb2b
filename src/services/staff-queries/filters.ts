import type { EntityName, FilterQuery } from '@mikro-orm/core';
import type { User } from '../../db/entities/user.js';
import { NotFoundError } from '../../domain/errors.js';
import { parseUuid } from '../../domain/ids.js';
import type { DataContext } from '../context.js';
import { findPage, type Page, type PageRequest } from '../common/pagination.js';
import { findWalletOwner } from '../wallet/find-wallet-owner.js';

/**
 * What support staff filter every user's resources by (the staff API's query and the CLI's
 * options alike). A filter that does not apply to a resource is ignored; one that matches
 * nothing (an unknown user, an unknown status) gives an empty page, never an error.
 */
export interface StaffListFilters {
  /** A user id (UUID) or a username. */
  user?: string;
  /** The resource's own status values. */
  status?: string;
  /** Payments, refunds (their payment's), top-ups, webhook logs. */
  orderId?: string;
  /** Invoices and credit notes: their number, exactly. */
  number?: string;
  /** Inclusive. */
  createdAfter?: Date;
  /** Exclusive. */
  createdBefore?: Date;
}

/** The user an operator or a staff member names, by username or by id; NotFoundError when none. */
export async function findUserByRef(ctx: Pick<DataContext, 'em'>, ref: string): Promise<User> {
  return findWalletOwner(ctx, ref);
}

/** The user a filter names; undefined without a user filter, null when nobody is so named. */
export async function filterUser(ctx: Pick<DataContext, 'em'>, filters: StaffListFilters): Promise<User | null | undefined> {
  if (filters.user === undefined) return undefined;
  try {
    return await findUserByRef(ctx, filters.user);
  } catch (err) {
    if (err instanceof NotFoundError) return null;
    throw err;
  }
}

/** The created_at window of the filters, as a condition to merge into a where clause. */
export function createdWithin(filters: StaffListFilters): { createdAt?: { $gte?: Date; $lt?: Date } } {
  if (!filters.createdAfter && !filters.createdBefore) return {};
  return { createdAt: { ...(filters.createdAfter ? { $gte: filters.createdAfter } : {}), ...(filters.createdBefore ? { $lt: filters.createdBefore } : {}) } };
}

/** An invoice or credit note number as it is stored (upper case), from what staff typed. */
export function documentNumber(text: string): string {
  return text.trim().toUpperCase();
}

/** Newest first; the id breaks ties of the same instant so that pages never overlap. */
export const NEWEST_FIRST = [{ createdAt: 'desc' }, { id: 'asc' }] as const;

/** One page of a staff list, newest first. */
export async function staffPage<T extends object>(
  ctx: Pick<DataContext, 'em'>,
  entity: EntityName<T>,
  where: FilterQuery<T>,
  page: PageRequest,
  populate: readonly string[] = [],
): Promise<Page<T>> {
  return findPage(ctx.em, entity, where, page, { orderBy: NEWEST_FIRST, populate });
}

/**
 * One record of any user by id, with the relations its wire shape needs. A reference that is no
 * UUID is looked up by `otherKey` (a number, an order id) when the record has one, else it is
 * simply not found (PostgreSQL would otherwise refuse it as a uuid).
 */
export async function staffRecord<T extends object>(
  ctx: Pick<DataContext, 'em'>,
  entity: EntityName<T>,
  what: string,
  ref: string,
  populate: readonly string[] = [],
  otherKey?: (ref: string) => FilterQuery<T>,
): Promise<T> {
  const id = parseUuid(ref);
  const where = id ? ({ id } as FilterQuery<T>) : otherKey?.(ref);
  const found = where ? await ctx.em.findOne(entity, where, { populate: populate as never }) : null;
  if (!found) throw new NotFoundError(`${what} "${ref}"`);
  return found as T;
}
