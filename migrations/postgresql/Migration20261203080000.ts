import { Migration } from '@mikro-orm/migrations';

/**
 * The user's access version also counts changes to their payments and invoices, and one row
 * keyed `*plans*` counts changes to the plan catalogue. Hand-written (the snapshot does not see
 * triggers). The answer cache of the polled reads (src/http/answer-cache.ts) keeps a user's
 * `GET /payments/` and `GET /subscriptions/active/` answer only while both read the same: a
 * payments page is the user's payment rows, the active subscription is their subscription row,
 * its open renewal invoice and its plans' rows. Statement triggers over transition tables, as
 * for subscriptions: one set-based upsert per statement, version rows taken in user order.
 */
export class Migration20261203080000 extends Migration {

  override async up(): Promise<void> {
    const fn = (name: string, userId: string) =>
      `create function "${name}"() returns trigger language plpgsql as $$ begin insert into "access_versions" ("user_id", "version") select distinct u, 1 from (select ${userId} as u from "changed_rows") c where u is not null order by u on conflict ("user_id") do update set "version" = "access_versions"."version" + 1; return null; end $$;`;
    this.addSql(fn('access_versions_bump_payments', '"user_id"::text'));
    this.addSql(fn('access_versions_bump_invoices', '"user_id"::text'));
    this.addSql(fn('access_versions_bump_plans', `'*plans*'::text`));
    // As for subscriptions: a row's user_id is written once and never changes (updates see the new rows).
    const trigger = (table: string, op: 'insert' | 'update' | 'delete') =>
      `create trigger "access_versions_${table}_${op}" after ${op} on "${table}" referencing ${op === 'delete' ? 'old' : 'new'} table as "changed_rows" for each statement execute function "access_versions_bump_${table}"();`;
    for (const table of ['payments', 'invoices', 'plans']) {
      for (const op of ['insert', 'update', 'delete'] as const) this.addSql(trigger(table, op));
    }
  }

  override async down(): Promise<void> {
    for (const table of ['payments', 'invoices', 'plans']) {
      for (const name of ['insert', 'update', 'delete']) this.addSql(`drop trigger if exists "access_versions_${table}_${name}" on "${table}";`);
      this.addSql(`drop function if exists "access_versions_bump_${table}"();`);
    }
    this.addSql(`delete from "access_versions" where "user_id" = '*plans*';`);
  }

}
