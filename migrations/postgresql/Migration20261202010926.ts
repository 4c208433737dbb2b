import { Migration } from '@mikro-orm/migrations';

export class Migration20261202010926 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "billable_metrics" ("id" uuid not null, "code" varchar(100) not null, "name" varchar(200) not null, "description" text not null default '', "aggregation" varchar(20) not null, "field" varchar(100) null, "filters" jsonb null, "status" varchar(10) not null default 'active', "archived_at" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "billable_metrics_pkey" primary key ("id"));`);
    this.addSql(`alter table "billable_metrics" add constraint "billable_metrics_code_unique" unique ("code");`);

    this.addSql(`alter table "plans" add column "charges" jsonb not null default '[]';`);

    this.addSql(`alter table "subscriptions" add column "usage_billed_until" timestamptz null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "billable_metrics" cascade;`);

    this.addSql(`alter table "plans" drop column "charges";`);

    this.addSql(`alter table "subscriptions" drop column "usage_billed_until";`);
  }

}
