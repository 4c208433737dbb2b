import { Migration } from '@mikro-orm/migrations';

export class Migration20261123212122 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "trial_grants" ("id" uuid not null, "user_id" uuid not null, "plan_id" uuid not null, "created_at" timestamptz not null, constraint "trial_grants_pkey" primary key ("id"));`);
    this.addSql(`alter table "trial_grants" add constraint "trial_grants_user_plan_unique" unique ("user_id", "plan_id");`);

    this.addSql(`create table "period_funds" ("id" uuid not null, "subscription_id" uuid not null, "payment_id" uuid not null, "amount" numeric(20,2) not null, "period_start" timestamptz not null, "period_end" timestamptz not null, "created_at" timestamptz not null, constraint "period_funds_pkey" primary key ("id"));`);
    this.addSql(`create index "period_funds_subscription_id_period_end_index" on "period_funds" ("subscription_id", "period_end");`);
    this.addSql(`create index "period_funds_payment_id_index" on "period_funds" ("payment_id");`);

    this.addSql(`alter table "trial_grants" add constraint "trial_grants_user_id_foreign" foreign key ("user_id") references "users" ("id") on update cascade;`);
    this.addSql(`alter table "trial_grants" add constraint "trial_grants_plan_id_foreign" foreign key ("plan_id") references "plans" ("id") on update cascade;`);

    this.addSql(`alter table "period_funds" add constraint "period_funds_subscription_id_foreign" foreign key ("subscription_id") references "subscriptions" ("id") on update cascade;`);
    this.addSql(`alter table "period_funds" add constraint "period_funds_payment_id_foreign" foreign key ("payment_id") references "payments" ("id") on update cascade;`);

    this.addSql(`alter table "subscriptions" add column "pending_change_plan_id" uuid null, add column "pending_change" jsonb null;`);
    this.addSql(`alter table "subscriptions" add constraint "subscriptions_pending_change_plan_id_foreign" foreign key ("pending_change_plan_id") references "plans" ("id") on update cascade on delete set null;`);

    this.addSql(`alter table "payments" add column "credited_amount" numeric(20,2) not null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "trial_grants" cascade;`);

    this.addSql(`drop table if exists "period_funds" cascade;`);

    this.addSql(`alter table "subscriptions" drop constraint "subscriptions_pending_change_plan_id_foreign";`);

    this.addSql(`alter table "payments" drop column "credited_amount";`);

    this.addSql(`alter table "subscriptions" drop column "pending_change_plan_id", drop column "pending_change";`);
  }

}
