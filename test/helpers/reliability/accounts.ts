import type { EntityManager } from '@mikro-orm/knex';
import { loadConfig } from '../../../src/config.js';
import { migrateUp, openOrm } from '../../../src/db/orm.js';
import { systemClock } from '../../../src/domain/clock.js';
import { seedPlans } from '../../../src/services/plans/seed-plans.js';
import { createUser } from '../../../src/services/users/create-user.js';
import { STANDARD_PLANS } from '../server.js';

export interface Account {
  id: string;
  username: string;
  password: string;
}

/**
 * Migrates a fresh database and creates the standard plans and the named users (through the
 * same use cases as the CLI), before any server process starts.
 */
/** Users named in `staff` are staff users (the staff API's Basic credentials). */
export async function prepareDatabase(databaseUrl: string, usernames: string[], options: { staff?: string[] } = {}): Promise<Record<string, Account>> {
  const orm = await openOrm(databaseUrl, { create: true });
  try {
    await migrateUp(orm);
    const ctx = () => ({ em: orm.em.fork() as EntityManager, config: loadConfig({ DATABASE_URL: databaseUrl, SESSION_SECRET: 'x' }), clock: systemClock });
    await seedPlans(ctx(), STANDARD_PLANS);
    const accounts: Record<string, Account> = {};
    for (const username of usernames) {
      const password = `${username} has a long password`;
      const user = await createUser(ctx(), { username, password, email: `${username}@example.com`, firstName: 'Rel', lastName: 'Iable', isStaff: options.staff?.includes(username) ?? false });
      accounts[username] = { id: user.id, username, password };
    }
    return accounts;
  } finally {
    await orm.close(true);
  }
}
