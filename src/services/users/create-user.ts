import { User } from '../../db/entities/user.js';
import { DomainError, ValidationError, type FieldError } from '../../domain/errors.js';
import type { DataContext } from '../context.js';
import { hashPassword, passwordProblem } from './passwords.js';

export interface CreateUserInput {
  username: string;
  password: string;
  email?: string | null;
  isStaff?: boolean;
  firstName?: string;
  lastName?: string;
  phone?: string | null;
}

/** Usernames: no ':' ever, so that `ext:<external_id>` never names a username. */
export const USERNAME = /^[A-Za-z0-9_.@+-]{1,150}$/;
export const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** Creates an account (operators do this with `billing-admin users create`). */
export async function createUser(ctx: DataContext, input: CreateUserInput): Promise<User> {
  const errors: FieldError[] = [];
  if (!USERNAME.test(input.username)) errors.push({ field: 'username', message: 'must be 1-150 letters, digits or _ . @ + -' });
  const passwordError = passwordProblem(input.password);
  if (passwordError) errors.push({ field: 'password', message: passwordError });
  if (input.email && (!EMAIL.test(input.email) || input.email.length > 254)) errors.push({ field: 'email', message: 'is not an email address' });
  if (errors.length > 0) throw new ValidationError(errors);

  if (await ctx.em.findOne(User, { username: input.username })) {
    throw new DomainError('conflict', `A user named "${input.username}" already exists.`);
  }
  const user = ctx.em.create(User, {
    username: input.username,
    passwordHash: await hashPassword(input.password),
    email: input.email ?? null,
    isStaff: input.isStaff ?? false,
    firstName: input.firstName ?? '',
    lastName: input.lastName ?? '',
    phone: input.phone ?? null,
  } as User);
  await ctx.em.flush();
  return user;
}
