import { Migration } from '@mikro-orm/migrations';

/**
 * The user's access version also counts changes to their payments and invoices, and one row
 * keyed `*plans*` counts changes to the plan catalogue. Hand-written (the snapshot does not see
 * triggers). The answer cache of the polled reads (src/http/answer-cache.ts) keeps a user's
 * `GET /payments/` and `GET /subscriptions/active/` answer only while both read the same: a
 * payments page is the user's payment rows, the active subscription is their subscription row,
 * its open renewal invoice and its plans' rows.
 */
export class Migration20261203080000 extends Migration {

  override async up(): Promise<void> {
    const bump = (key: string) =>
      `insert into \`access_versions\` (\`user_id\`, \`version\`) select ${key}, 1 where ${key} is not null on conflict (\`user_id\`) do update set \`version\` = \`version\` + 1;`;
    for (const table of ['payments', 'invoices']) {
      for (const op of ['insert', 'update', 'delete']) {
        const row = op === 'delete' ? 'old' : 'new';
        // As for subscriptions: a row's user_id is written once and never changes.
        this.addSql(`create trigger \`access_versions_${table}_${op}\` after ${op} on \`${table}\` begin ${bump(`${row}.\`user_id\``)} end;`);
      }
    }
    for (const op of ['insert', 'update', 'delete']) {
      this.addSql(`create trigger \`access_versions_plans_${op}\` after ${op} on \`plans\` begin ${bump(`'*plans*'`)} end;`);
    }
  }

  override async down(): Promise<void> {
    for (const table of ['payments', 'invoices', 'plans']) {
      for (const op of ['insert', 'update', 'delete']) this.addSql(`drop trigger if exists \`access_versions_${table}_${op}\`;`);
    }
    this.addSql(`delete from \`access_versions\` where \`user_id\` = '*plans*';`);
  }

}
