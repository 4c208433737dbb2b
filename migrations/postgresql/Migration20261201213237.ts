import { Migration } from '@mikro-orm/migrations';

export class Migration20261201213237 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "coupons" ("id" uuid not null, "code" varchar(64) not null, "name" varchar(200) not null, "percent_off" varchar(6) null, "amount_off" numeric(20,2) null, "currency" varchar(3) null, "duration" varchar(10) not null default 'once', "duration_in_cycles" int null, "max_redemptions" int null, "times_redeemed" int not null default 0, "redeem_by" timestamptz null, "plans" jsonb null, "active" boolean not null default true, "archived_at" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "coupons_pkey" primary key ("id"));`);
    this.addSql(`alter table "coupons" add constraint "coupons_code_unique" unique ("code");`);
    this.addSql(`create index "coupons_active_created_at_index" on "coupons" ("active", "created_at");`);

    this.addSql(`create table "promotion_codes" ("id" uuid not null, "code" varchar(64) not null, "code_key" varchar(64) not null, "coupon_id" uuid not null, "max_redemptions" int null, "times_redeemed" int not null default 0, "expires_at" timestamptz null, "first_time_only" boolean not null default false, "minimum_amount" numeric(20,2) null, "customer_id" uuid null, "active" boolean not null default true, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "promotion_codes_pkey" primary key ("id"));`);
    this.addSql(`alter table "promotion_codes" add constraint "promotion_codes_code_key_unique" unique ("code_key");`);
    this.addSql(`create index "promotion_codes_coupon_id_index" on "promotion_codes" ("coupon_id");`);

    this.addSql(`create table "coupon_redemptions" ("id" uuid not null, "coupon_id" uuid not null, "promotion_code_id" uuid null, "user_id" uuid not null, "subscription_id" uuid null, "created_at" timestamptz not null, constraint "coupon_redemptions_pkey" primary key ("id"));`);
    this.addSql(`create index "coupon_redemptions_user_id_coupon_id_index" on "coupon_redemptions" ("user_id", "coupon_id");`);

    this.addSql(`alter table "promotion_codes" add constraint "promotion_codes_coupon_id_foreign" foreign key ("coupon_id") references "coupons" ("id") on update cascade;`);
    this.addSql(`alter table "promotion_codes" add constraint "promotion_codes_customer_id_foreign" foreign key ("customer_id") references "users" ("id") on update cascade on delete set null;`);

    this.addSql(`alter table "coupon_redemptions" add constraint "coupon_redemptions_coupon_id_foreign" foreign key ("coupon_id") references "coupons" ("id") on update cascade;`);
    this.addSql(`alter table "coupon_redemptions" add constraint "coupon_redemptions_promotion_code_id_foreign" foreign key ("promotion_code_id") references "promotion_codes" ("id") on update cascade on delete set null;`);
    this.addSql(`alter table "coupon_redemptions" add constraint "coupon_redemptions_user_id_foreign" foreign key ("user_id") references "users" ("id") on update cascade;`);
    this.addSql(`alter table "coupon_redemptions" add constraint "coupon_redemptions_subscription_id_foreign" foreign key ("subscription_id") references "subscriptions" ("id") on update cascade on delete set null;`);

    this.addSql(`alter table "plans" add column "per_unit" boolean not null default false;`);

    this.addSql(`alter table "subscriptions" add column "quantity" int not null default 1, add column "pending_quantity" int null, add column "discount" jsonb null;`);

    this.addSql(`alter table "invoices" add column "discount_amount" numeric(20,2) not null default 0;`);

    this.addSql(`alter table "invoice_lines" add column "discount_amount" numeric(20,2) not null default 0;`);

    this.addSql(`alter table "hosted_sessions" add column "quantity" int not null default 1, add column "promotion_code" varchar(64) null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "promotion_codes" drop constraint "promotion_codes_coupon_id_foreign";`);

    this.addSql(`alter table "coupon_redemptions" drop constraint "coupon_redemptions_coupon_id_foreign";`);

    this.addSql(`alter table "coupon_redemptions" drop constraint "coupon_redemptions_promotion_code_id_foreign";`);

    this.addSql(`drop table if exists "coupons" cascade;`);

    this.addSql(`drop table if exists "promotion_codes" cascade;`);

    this.addSql(`drop table if exists "coupon_redemptions" cascade;`);

    this.addSql(`alter table "plans" drop column "per_unit";`);

    this.addSql(`alter table "subscriptions" drop column "quantity", drop column "pending_quantity", drop column "discount";`);

    this.addSql(`alter table "invoices" drop column "discount_amount";`);

    this.addSql(`alter table "invoice_lines" drop column "discount_amount";`);

    this.addSql(`alter table "hosted_sessions" drop column "quantity", drop column "promotion_code";`);
  }

}
