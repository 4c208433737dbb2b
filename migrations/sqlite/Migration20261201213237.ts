import { Migration } from '@mikro-orm/migrations';

export class Migration20261201213237 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table \`coupons\` (\`id\` text not null, \`code\` text not null, \`name\` text not null, \`percent_off\` text null, \`amount_off\` integer null, \`currency\` text null, \`duration\` text not null default 'once', \`duration_in_cycles\` integer null, \`max_redemptions\` integer null, \`times_redeemed\` integer not null default 0, \`redeem_by\` datetime null, \`plans\` json null, \`active\` integer not null default true, \`archived_at\` datetime null, \`created_at\` datetime not null, \`updated_at\` datetime not null, primary key (\`id\`));`);
    this.addSql(`create unique index \`coupons_code_unique\` on \`coupons\` (\`code\`);`);
    this.addSql(`create index \`coupons_active_created_at_index\` on \`coupons\` (\`active\`, \`created_at\`);`);

    this.addSql(`create table \`promotion_codes\` (\`id\` text not null, \`code\` text not null, \`code_key\` text not null, \`coupon_id\` text not null, \`max_redemptions\` integer null, \`times_redeemed\` integer not null default 0, \`expires_at\` datetime null, \`first_time_only\` integer not null default false, \`minimum_amount\` integer null, \`customer_id\` text null, \`active\` integer not null default true, \`created_at\` datetime not null, \`updated_at\` datetime not null, constraint \`promotion_codes_coupon_id_foreign\` foreign key(\`coupon_id\`) references \`coupons\`(\`id\`) on update cascade, constraint \`promotion_codes_customer_id_foreign\` foreign key(\`customer_id\`) references \`users\`(\`id\`) on delete set null on update cascade, primary key (\`id\`));`);
    this.addSql(`create unique index \`promotion_codes_code_key_unique\` on \`promotion_codes\` (\`code_key\`);`);
    this.addSql(`create index \`promotion_codes_customer_id_index\` on \`promotion_codes\` (\`customer_id\`);`);
    this.addSql(`create index \`promotion_codes_coupon_id_index\` on \`promotion_codes\` (\`coupon_id\`);`);

    this.addSql(`create table \`coupon_redemptions\` (\`id\` text not null, \`coupon_id\` text not null, \`promotion_code_id\` text null, \`user_id\` text not null, \`subscription_id\` text null, \`created_at\` datetime not null, constraint \`coupon_redemptions_coupon_id_foreign\` foreign key(\`coupon_id\`) references \`coupons\`(\`id\`) on update cascade, constraint \`coupon_redemptions_promotion_code_id_foreign\` foreign key(\`promotion_code_id\`) references \`promotion_codes\`(\`id\`) on delete set null on update cascade, constraint \`coupon_redemptions_user_id_foreign\` foreign key(\`user_id\`) references \`users\`(\`id\`) on update cascade, constraint \`coupon_redemptions_subscription_id_foreign\` foreign key(\`subscription_id\`) references \`subscriptions\`(\`id\`) on delete set null on update cascade, primary key (\`id\`));`);
    this.addSql(`create index \`coupon_redemptions_coupon_id_index\` on \`coupon_redemptions\` (\`coupon_id\`);`);
    this.addSql(`create index \`coupon_redemptions_promotion_code_id_index\` on \`coupon_redemptions\` (\`promotion_code_id\`);`);
    this.addSql(`create index \`coupon_redemptions_user_id_index\` on \`coupon_redemptions\` (\`user_id\`);`);
    this.addSql(`create index \`coupon_redemptions_subscription_id_index\` on \`coupon_redemptions\` (\`subscription_id\`);`);
    this.addSql(`create index \`coupon_redemptions_user_id_coupon_id_index\` on \`coupon_redemptions\` (\`user_id\`, \`coupon_id\`);`);

    this.addSql(`alter table \`plans\` add column \`per_unit\` integer not null default false;`);

    this.addSql(`alter table \`subscriptions\` add column \`quantity\` integer not null default 1;`);
    this.addSql(`alter table \`subscriptions\` add column \`pending_quantity\` integer null;`);
    this.addSql(`alter table \`subscriptions\` add column \`discount\` json null;`);

    this.addSql(`alter table \`invoices\` add column \`discount_amount\` integer not null default 0;`);

    this.addSql(`alter table \`invoice_lines\` add column \`discount_amount\` integer not null default 0;`);

    this.addSql(`alter table \`hosted_sessions\` add column \`quantity\` integer not null default 1;`);
    this.addSql(`alter table \`hosted_sessions\` add column \`promotion_code\` text null;`);
  }

}
