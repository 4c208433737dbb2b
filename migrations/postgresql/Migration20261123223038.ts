import { Migration } from '@mikro-orm/migrations';

export class Migration20261123223038 extends Migration {

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

    this.addSql(`alter table "subscriptions" add column "card_token_expires_at" timestamptz null, add column "card_expiry_notified_token" varchar(200) null, add column "pending_change_plan_id" uuid null, add column "pending_change" jsonb null;`);
    this.addSql(`alter table "subscriptions" add constraint "subscriptions_pending_change_plan_id_foreign" foreign key ("pending_change_plan_id") references "plans" ("id") on update cascade on delete set null;`);

    this.addSql(`alter table "payments" add column "credited_amount" numeric(20,2) not null default 0, add column "failure_reason" varchar(50) null;`);

    this.addSql(`alter table "refunds" add column "method" varchar(20) not null default 'refund';`);
    // NOTE: hand-written, not derived from the entities. Rows that existed before the money rules
    // of issue 14: credited_amount starts at zero (the entity sets it on create, so the column
    // keeps no default); a trial already given counts as granted on the subscription's plan; and
    // the latest settled payment of a live subscription funds its current period, net of refunds,
    // so downgrades and refunds of existing customers give credit (conservatively: a proration
    // payment funds only its own amount).
    this.addSql(`alter table "payments" alter column "credited_amount" drop default;`);
    this.addSql(`insert into "trial_grants" ("id", "user_id", "plan_id", "created_at") select gen_random_uuid(), t."user_id", t."plan_id", now() from (select distinct "user_id", "plan_id" from "subscriptions" where "trial_end" is not null) t;`);
    this.addSql(`insert into "period_funds" ("id", "subscription_id", "payment_id", "amount", "period_start", "period_end", "created_at") select gen_random_uuid(), s."id", p."id", p."gross_amount" - p."refunded_amount", s."current_period_start", s."current_period_end", now() from "subscriptions" s join lateral (select * from "payments" q where q."subscription_id" = s."id" and q."status" in ('settled', 'partially_refunded') order by q."paid_at" desc nulls last, q."created_at" desc limit 1) p on true where s."status" in ('active', 'paused', 'past_due') and s."current_period_start" is not null and s."current_period_end" is not null and p."gross_amount" > p."refunded_amount";`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "trial_grants" cascade;`);

    this.addSql(`drop table if exists "period_funds" cascade;`);

    this.addSql(`alter table "subscriptions" drop constraint "subscriptions_pending_change_plan_id_foreign";`);

    this.addSql(`alter table "payments" drop column "credited_amount", drop column "failure_reason";`);

    this.addSql(`alter table "refunds" drop column "method";`);

    this.addSql(`alter table "subscriptions" drop column "card_token_expires_at", drop column "card_expiry_notified_token", drop column "pending_change_plan_id", drop column "pending_change";`);
  }

}
