import { Migration } from '@mikro-orm/migrations';

export class Migration20261123223038 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table \`trial_grants\` (\`id\` text not null, \`user_id\` text not null, \`plan_id\` text not null, \`created_at\` datetime not null, constraint \`trial_grants_user_id_foreign\` foreign key(\`user_id\`) references \`users\`(\`id\`) on update cascade, constraint \`trial_grants_plan_id_foreign\` foreign key(\`plan_id\`) references \`plans\`(\`id\`) on update cascade, primary key (\`id\`));`);
    this.addSql(`create index \`trial_grants_user_id_index\` on \`trial_grants\` (\`user_id\`);`);
    this.addSql(`create index \`trial_grants_plan_id_index\` on \`trial_grants\` (\`plan_id\`);`);
    this.addSql(`create unique index \`trial_grants_user_plan_unique\` on \`trial_grants\` (\`user_id\`, \`plan_id\`);`);

    this.addSql(`create table \`period_funds\` (\`id\` text not null, \`subscription_id\` text not null, \`payment_id\` text not null, \`amount\` integer not null, \`period_start\` datetime not null, \`period_end\` datetime not null, \`created_at\` datetime not null, constraint \`period_funds_subscription_id_foreign\` foreign key(\`subscription_id\`) references \`subscriptions\`(\`id\`) on update cascade, constraint \`period_funds_payment_id_foreign\` foreign key(\`payment_id\`) references \`payments\`(\`id\`) on update cascade, primary key (\`id\`));`);
    this.addSql(`create index \`period_funds_subscription_id_index\` on \`period_funds\` (\`subscription_id\`);`);
    this.addSql(`create index \`period_funds_subscription_id_period_end_index\` on \`period_funds\` (\`subscription_id\`, \`period_end\`);`);
    this.addSql(`create index \`period_funds_payment_id_index\` on \`period_funds\` (\`payment_id\`);`);

    this.addSql(`alter table \`subscriptions\` add column \`card_token_expires_at\` datetime null;`);
    this.addSql(`alter table \`subscriptions\` add column \`card_expiry_notified_token\` text null;`);
    this.addSql(`alter table \`subscriptions\` add column \`pending_change_plan_id\` text null constraint \`subscriptions_pending_change_plan_id_foreign\` references \`plans\` (\`id\`) on update cascade on delete set null;`);
    this.addSql(`alter table \`subscriptions\` add column \`pending_change\` json null;`);
    this.addSql(`create index \`subscriptions_pending_change_plan_id_index\` on \`subscriptions\` (\`pending_change_plan_id\`);`);

    this.addSql(`alter table \`payments\` add column \`credited_amount\` integer not null default 0;`);
    this.addSql(`alter table \`payments\` add column \`failure_reason\` text null;`);

    this.addSql(`alter table \`refunds\` add column \`method\` text not null default 'refund';`);
  }

}
