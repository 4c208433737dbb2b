import { Migration } from '@mikro-orm/migrations';

export class Migration20261122022508 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "delivery_attempts" ("id" uuid not null, "notification_id" uuid not null, "attempted_at" timestamptz not null, "outcome" varchar(10) not null, "http_status" int null, "error" text null, "duration_ms" int not null default 0, constraint "delivery_attempts_pkey" primary key ("id"));`);
    this.addSql(`create index "delivery_attempts_notification_id_attempted_at_index" on "delivery_attempts" ("notification_id", "attempted_at");`);

    this.addSql(`alter table "delivery_attempts" add constraint "delivery_attempts_notification_id_foreign" foreign key ("notification_id") references "notifications" ("id") on update cascade;`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "delivery_attempts" cascade;`);
  }

}
