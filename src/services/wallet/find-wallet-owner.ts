import type { User } from '../../db/entities/user.js';
import type { DataContext } from '../context.js';
import { findCustomer } from '../users/find-customer.js';

/** The user an operator names on the command line: by username, id or `ext:<external_id>`. */
export async function findWalletOwner(ctx: Pick<DataContext, 'em'>, usernameOrId: string): Promise<User> {
  return findCustomer(ctx, usernameOrId);
}
