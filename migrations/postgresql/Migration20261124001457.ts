import { Migration } from '@mikro-orm/migrations';

export class Migration20261124001457 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "access_versions" ("user_id" varchar(36) not null, "version" bigint not null, constraint "access_versions_pkey" primary key ("user_id"));`);
    // NOTE: hand-written, not derived from the entities (the snapshot does not see triggers).
    // Every write that can change a user's access raises their access version, whoever makes it
    // (use cases, the gateway-event pipeline, set-based billing SQL, the CLI): per-process caches
    // of sessions, users and access answers are valid only while it reads the same
    // (src/http/auth/access-cache.ts). A missing row reads as version 0. The bump is part of the
    // writing transaction, so no process sees the new version before the change it stands for.
    // Statement triggers over transition tables: a billing batch of 1,000 renewals is one
    // set-based upsert, taking the version rows in user order (no lock-order deadlocks among them).
    const fn = (name: string, userId: string) =>
      `create function "${name}"() returns trigger language plpgsql as $$ begin insert into "access_versions" ("user_id", "version") select distinct u, 1 from (select ${userId} as u from "changed_rows") c where u is not null order by u on conflict ("user_id") do update set "version" = "access_versions"."version" + 1; return null; end $$;`;
    this.addSql(fn('access_versions_bump_subscriptions', '"user_id"::text'));
    this.addSql(fn('access_versions_bump_users', '"id"::text'));
    // A session ending (logout, expiry purge, regeneration) or changing revokes what was cached for it.
    this.addSql(fn('access_versions_bump_sessions', `(case when "data" like '{%' then "data"::jsonb ->> 'userId' end)`));
    const trigger = (table: string, op: 'insert' | 'update' | 'delete') =>
      `create trigger "access_versions_${table}_${op}" after ${op} on "${table}" referencing ${op === 'delete' ? 'old' : 'new'} table as "changed_rows" for each statement execute function "access_versions_bump_${table}"();`;
    for (const op of ['insert', 'update', 'delete'] as const) this.addSql(trigger('subscriptions', op));
    for (const op of ['update', 'delete'] as const) {
      this.addSql(trigger('users', op));
      this.addSql(trigger('sessions', op));
    }
  }

  override async down(): Promise<void> {
    for (const table of ['subscriptions', 'users', 'sessions']) {
      for (const op of ['insert', 'update', 'delete']) this.addSql(`drop trigger if exists "access_versions_${table}_${op}" on "${table}";`);
      this.addSql(`drop function if exists "access_versions_bump_${table}"();`);
    }
    this.addSql(`drop table if exists "access_versions" cascade;`);
  }

}
