import { UniqueConstraintViolationException, type FilterQuery } from '@mikro-orm/core';
import { User } from '../../db/entities/user.js';
import { DomainError, ValidationError, type FieldError } from '../../domain/errors.js';
import { parseTaxProfile, type TaxProfile, type TaxProfileInput } from '../../domain/tax-profile.js';
import { changedFields, recordAuditEvent } from '../audit/record-audit-event.js';
import type { Actor } from '../audit/actor.js';
import { containsText, findPage, type Page, type PageRequest } from '../common/pagination.js';
import type { DataContext } from '../context.js';
import { EMAIL, USERNAME } from './create-user.js';
import { findCustomer } from './find-customer.js';
import { hashPassword, passwordProblem } from './passwords.js';

/*
 * Customers as an integrator's backend makes them: named by the integrator's own id
 * (`external_id`), usually without a password (they never log in here; the backend acts for
 * them and sends them to the hosted pages). Every create and change is in the audit trail.
 */

/** The languages a customer may read: the hosted pages' and the emails'. */
export const CUSTOMER_LOCALES = ['id', 'en'] as const;
export type CustomerLocale = (typeof CUSTOMER_LOCALES)[number];

/** Visible ASCII, at most 100: an id from any system, safe in a URL path once percent-encoded. */
const EXTERNAL_ID = /^[\x21-\x7e]{1,100}$/;

export interface CustomerFields {
  email?: string | null;
  firstName?: string;
  lastName?: string;
  locale?: string | null;
  externalId?: string | null;
  taxProfile?: TaxProfileInput | null;
}

export interface CreateCustomerInput extends CustomerFields {
  username?: string;
  password?: string;
  reason?: string | null;
}

/** The fields of a customer the audit trail compares before and after a change. */
function audited(user: User): Record<string, unknown> {
  return {
    username: user.username,
    external_id: user.externalId,
    email: user.email,
    first_name: user.firstName,
    last_name: user.lastName,
    locale: user.locale,
    tax_profile: user.taxProfile,
    has_password: user.passwordHash !== '',
  };
}

/** Checks the fields a create and an update share, into `errors`; returns the values to store. */
function checkFields(input: CustomerFields, errors: FieldError[]): Partial<Pick<User, 'email' | 'firstName' | 'lastName' | 'locale' | 'externalId'>> & { taxProfile?: TaxProfile | null } {
  const out: ReturnType<typeof checkFields> = {};
  if (input.externalId !== undefined) {
    if (input.externalId !== null && !EXTERNAL_ID.test(input.externalId)) errors.push({ field: 'external_id', message: 'must be 1-100 visible ASCII characters (no spaces)' });
    out.externalId = input.externalId;
  }
  if (input.email !== undefined) {
    const email = input.email?.trim() ?? null;
    if (email !== null && (email.length > 254 || !EMAIL.test(email))) errors.push({ field: 'email', message: 'is not an email address' });
    out.email = email;
  }
  for (const [key, field] of [['firstName', 'first_name'], ['lastName', 'last_name']] as const) {
    const value = input[key];
    if (value === undefined) continue;
    if (value.length > 150) errors.push({ field, message: 'must be at most 150 characters' });
    out[key] = value.trim();
  }
  if (input.locale !== undefined) {
    if (input.locale !== null && !(CUSTOMER_LOCALES as readonly string[]).includes(input.locale)) errors.push({ field: 'locale', message: `must be one of ${CUSTOMER_LOCALES.join(', ')}` });
    out.locale = input.locale;
  }
  if (input.taxProfile !== undefined) {
    try {
      out.taxProfile = input.taxProfile === null ? null : parseTaxProfile(input.taxProfile);
    } catch (err) {
      if (!(err instanceof ValidationError)) throw err;
      errors.push(...err.errors.map((e) => ({ field: `tax_profile.${e.field}`, message: e.message })));
    }
  }
  return out;
}

/** 409 customer_exists, naming the customer that holds the external id or username already. */
async function assertNoTwin(ctx: Pick<DataContext, 'em'>, values: { username?: string; externalId?: string | null }, except?: string): Promise<void> {
  const or: FilterQuery<User>[] = [];
  if (values.username !== undefined) or.push({ username: values.username });
  if (values.externalId) or.push({ externalId: values.externalId });
  if (or.length === 0) return;
  const twin = await ctx.em.findOne(User, { $or: or, ...(except ? { id: { $ne: except } } : {}) }, { fields: ['id', 'username', 'externalId'] });
  if (!twin) return;
  const which = values.externalId && twin.externalId === values.externalId ? `external_id "${values.externalId}"` : `username "${twin.username}"`;
  throw new DomainError('customer_exists', `A customer with ${which} exists already: ${twin.id}.`);
}

/**
 * Makes a customer (POST /admin/customers/, `billing-admin customers create`). The username
 * defaults to the external id; a customer without a password cannot log in. Two requests for
 * the same customer at once: the database's unique indexes let one in, the other gets 409.
 */
export async function createCustomer(ctx: DataContext, actor: Actor, input: CreateCustomerInput): Promise<User> {
  const errors: FieldError[] = [];
  const fields = checkFields(input, errors);
  let username = input.username;
  if (username === undefined && input.externalId) {
    if (USERNAME.test(input.externalId)) username = input.externalId;
    else errors.push({ field: 'username', message: 'is required when external_id is not a valid username (letters, digits or _ . @ + -)' });
  } else if (username === undefined) {
    errors.push({ field: 'external_id', message: 'give external_id, username, or both' });
  } else if (!USERNAME.test(username)) {
    errors.push({ field: 'username', message: 'must be 1-150 letters, digits or _ . @ + -' });
  }
  if (input.password !== undefined) {
    const problem = passwordProblem(input.password);
    if (problem) errors.push({ field: 'password', message: problem });
  }
  if (errors.length > 0) throw new ValidationError(errors);

  await assertNoTwin(ctx, { username, externalId: fields.externalId });
  const user = ctx.em.create(User, {
    username: username!,
    externalId: fields.externalId ?? null,
    email: fields.email ?? null,
    firstName: fields.firstName ?? '',
    lastName: fields.lastName ?? '',
    locale: fields.locale ?? null,
    taxProfile: fields.taxProfile ?? null,
    passwordHash: input.password === undefined ? '' : await hashPassword(input.password),
  } as User);
  try {
    await ctx.em.flush();
  } catch (err) {
    if (!(err instanceof UniqueConstraintViolationException)) throw err;
    // Another request made the same customer between our check and our insert.
    ctx.em.clear();
    await assertNoTwin(ctx, { username, externalId: fields.externalId });
    throw err;
  }
  await recordAuditEvent(ctx, actor, {
    action: 'customer.create',
    target: { type: 'customer', id: user.id },
    reason: input.reason,
    changes: changedFields({}, audited(user)),
  });
  return user;
}

/**
 * Changes a customer's details (PATCH /admin/customers/{customer}/). Only the fields given
 * change; a change that changes nothing records nothing.
 */
export async function updateCustomer(ctx: DataContext, actor: Actor, ref: string, input: CustomerFields & { reason?: string | null }): Promise<User> {
  const errors: FieldError[] = [];
  const fields = checkFields(input, errors);
  if (errors.length > 0) throw new ValidationError(errors);
  const user = await findCustomer(ctx, ref);
  if (fields.externalId) await assertNoTwin(ctx, { externalId: fields.externalId }, user.id);
  const before = audited(user);
  Object.assign(user, fields);
  const changes = changedFields(before, audited(user));
  if (Object.keys(changes).length === 0) return user;
  user.updatedAt = ctx.clock.now();
  try {
    await ctx.em.flush();
  } catch (err) {
    if (!(err instanceof UniqueConstraintViolationException)) throw err;
    ctx.em.clear();
    await assertNoTwin(ctx, { externalId: fields.externalId }, user.id);
    throw err;
  }
  await recordAuditEvent(ctx, actor, { action: 'customer.update', target: { type: 'customer', id: user.id }, reason: input.reason, changes });
  return user;
}

export interface CustomerFilters {
  externalId?: string;
  email?: string;
  /** Part of the username, external id, email or name, any case. */
  q?: string;
}

/** Customers (users who are not staff), newest first. */
export async function listCustomers(ctx: DataContext, filters: CustomerFilters, page: PageRequest): Promise<Page<User>> {
  const where: FilterQuery<User> & Record<string, unknown> = { isStaff: false };
  if (filters.externalId !== undefined) where.externalId = filters.externalId;
  if (filters.email !== undefined) Object.assign(where, { email: filters.email.trim() });
  const text = filters.q?.trim();
  const conditions: FilterQuery<User>[] = [where];
  if (text) conditions.push(containsText<User>(ctx.em, ['username', 'external_id', 'email', 'first_name', 'last_name'], text));
  return findPage(ctx.em, User, { $and: conditions }, page, { orderBy: [{ createdAt: 'desc' }, { id: 'asc' }] });
}
