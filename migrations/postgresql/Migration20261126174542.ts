import { Migration } from '@mikro-orm/migrations';

export class Migration20261126174542 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "api_keys" ("id" uuid not null, "name" varchar(100) not null, "scope" varchar(10) not null, "prefix" varchar(20) not null, "secret_hash" varchar(64) not null, "created_by" varchar(200) not null, "created_at" timestamptz not null, "last_used_at" timestamptz null, "revoked_at" timestamptz null, constraint "api_keys_pkey" primary key ("id"));`);
    this.addSql(`alter table "api_keys" add constraint "api_keys_secret_hash_unique" unique ("secret_hash");`);

    this.addSql(`create table "audit_events" ("id" uuid not null, "occurred_at" timestamptz not null, "actor_type" varchar(10) not null, "actor_id" varchar(200) not null, "actor_name" varchar(200) not null, "action" varchar(60) not null, "target_type" varchar(40) not null, "target_id" varchar(200) not null, "reason" text null, "request_id" text null, "changes" jsonb not null, constraint "audit_events_pkey" primary key ("id"));`);
    this.addSql(`create index "audit_events_target_id_index" on "audit_events" ("target_id");`);
    this.addSql(`create index "audit_events_actor_name_index" on "audit_events" ("actor_name");`);
    this.addSql(`create index "audit_events_occurred_at_index" on "audit_events" ("occurred_at");`);

    this.addSql(`alter table "users" add column "disabled_at" timestamptz null;`);

    // NOTE: hand-written: audit events are append-only. The trigger
    // refuses every UPDATE and DELETE whoever sends it, so no interface, not even SQL through the
    // service's own role, can rewrite the trail. TRUNCATE is refused too.
    this.addSql(`create function "audit_events_append_only"() returns trigger language plpgsql as $$ begin raise exception 'audit events are append-only: % refused', tg_op using errcode = '42501'; end; $$;`);
    this.addSql(`create trigger "audit_events_no_update_or_delete" before update or delete on "audit_events" for each row execute function "audit_events_append_only"();`);
    this.addSql(`create trigger "audit_events_no_truncate" before truncate on "audit_events" for each statement execute function "audit_events_append_only"();`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "api_keys" cascade;`);

    this.addSql(`drop table if exists "audit_events" cascade;`);
    this.addSql(`drop function if exists "audit_events_append_only"();`);

    this.addSql(`alter table "users" drop column "disabled_at";`);
  }

}
