import { Migration } from '@mikro-orm/migrations';

export class Migration20261122021700 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table \`counters\` (\`name\` text not null, \`value\` integer not null default 0, primary key (\`name\`));`);

    this.addSql(`create table \`idempotency_keys\` (\`id\` text not null, \`user_id\` text not null, \`key\` text not null, \`request_hash\` text not null, \`state\` text not null default 'in_progress', \`response_status\` integer null, \`response_body\` text null, \`created_at\` datetime not null, primary key (\`id\`));`);
    this.addSql(`create index \`idempotency_keys_created_at_index\` on \`idempotency_keys\` (\`created_at\`);`);
    this.addSql(`create unique index \`idempotency_keys_user_id_key_unique\` on \`idempotency_keys\` (\`user_id\`, \`key\`);`);

    this.addSql(`create table \`login_throttles\` (\`key\` text not null, \`failures\` integer not null default 0, \`window_start\` datetime not null, primary key (\`key\`));`);

    this.addSql(`create table \`plans\` (\`id\` text not null, \`name\` text not null, \`slug\` text not null, \`description\` text not null default '', \`price\` integer not null, \`currency\` text not null default 'IDR', \`interval\` integer not null default 1, \`interval_unit\` text not null default 'month', \`trial_period_days\` integer not null default 0, \`max_cycles\` integer not null default 0, \`status\` text not null default 'active', \`features\` json not null, \`sort_order\` integer not null default 0, \`created_at\` datetime not null, \`updated_at\` datetime not null, primary key (\`id\`));`);
    this.addSql(`create unique index \`plans_slug_unique\` on \`plans\` (\`slug\`);`);
    this.addSql(`create index \`plans_status_sort_order_index\` on \`plans\` (\`status\`, \`sort_order\`);`);

    this.addSql(`create table \`sessions\` (\`id\` text not null, \`data\` text not null, \`expires_at\` datetime not null, primary key (\`id\`));`);
    this.addSql(`create index \`sessions_expires_at_index\` on \`sessions\` (\`expires_at\`);`);

    this.addSql(`create table \`users\` (\`id\` text not null, \`username\` text not null, \`email\` text null, \`password_hash\` text not null, \`is_staff\` integer not null default false, \`first_name\` text not null default '', \`last_name\` text not null default '', \`phone\` text null, \`created_at\` datetime not null, \`updated_at\` datetime not null, primary key (\`id\`));`);
    this.addSql(`create unique index \`users_username_unique\` on \`users\` (\`username\`);`);

    this.addSql(`create table \`topups\` (\`id\` text not null, \`order_id\` text not null, \`user_id\` text not null, \`amount\` integer not null, \`currency\` text not null, \`status\` text not null default 'pending', \`payment_type\` text not null, \`bank\` text null, \`payment_details\` json not null, \`transaction_id\` text null, \`outcome_unknown\` integer not null default false, \`paid_at\` datetime null, \`expires_at\` datetime null, \`created_at\` datetime not null, \`updated_at\` datetime not null, constraint \`topups_user_id_foreign\` foreign key(\`user_id\`) references \`users\`(\`id\`) on update cascade, primary key (\`id\`));`);
    this.addSql(`create unique index \`topups_order_id_unique\` on \`topups\` (\`order_id\`);`);
    this.addSql(`create index \`topups_user_id_index\` on \`topups\` (\`user_id\`);`);
    this.addSql(`create index \`topups_user_id_created_at_index\` on \`topups\` (\`user_id\`, \`created_at\`);`);

    this.addSql(`create table \`subscriptions\` (\`id\` text not null, \`user_id\` text not null, \`plan_id\` text not null, \`status\` text not null default 'pending', \`live_user_id\` text null, \`payment_type\` text not null, \`bank\` text null, \`card_token\` text null, \`current_period_start\` datetime null, \`current_period_end\` datetime null, \`next_billing_date\` datetime null, \`billing_anchor\` datetime null, \`trial_end\` datetime null, \`trial_will_end_notified_at\` datetime null, \`cancel_at_period_end\` integer not null default false, \`canceled_at\` datetime null, \`cancel_reason\` text null, \`paused_at\` datetime null, \`pending_plan_id\` text null, \`cycles_completed\` integer not null default 0, \`metadata\` json not null, \`customer_details\` json not null, \`created_at\` datetime not null, \`updated_at\` datetime not null, constraint \`subscriptions_user_id_foreign\` foreign key(\`user_id\`) references \`users\`(\`id\`) on update cascade, constraint \`subscriptions_plan_id_foreign\` foreign key(\`plan_id\`) references \`plans\`(\`id\`) on update cascade, constraint \`subscriptions_pending_plan_id_foreign\` foreign key(\`pending_plan_id\`) references \`plans\`(\`id\`) on delete set null on update cascade, primary key (\`id\`));`);
    this.addSql(`create index \`subscriptions_user_id_index\` on \`subscriptions\` (\`user_id\`);`);
    this.addSql(`create index \`subscriptions_plan_id_index\` on \`subscriptions\` (\`plan_id\`);`);
    this.addSql(`create unique index \`subscriptions_live_user_id_unique\` on \`subscriptions\` (\`live_user_id\`);`);
    this.addSql(`create index \`subscriptions_pending_plan_id_index\` on \`subscriptions\` (\`pending_plan_id\`);`);
    this.addSql(`create index \`subscriptions_user_id_created_at_index\` on \`subscriptions\` (\`user_id\`, \`created_at\`);`);
    this.addSql(`create index \`subscriptions_status_next_billing_date_index\` on \`subscriptions\` (\`status\`, \`next_billing_date\`);`);

    this.addSql(`create table \`notifications\` (\`id\` text not null, \`user_id\` text not null, \`notification_type\` text not null, \`channel\` text not null, \`status\` text not null default 'queued', \`title\` text not null, \`message\` text not null, \`data\` json not null, \`read_at\` datetime null, \`sent_at\` datetime null, \`attempts\` integer not null default 0, \`last_error\` text null, \`next_attempt_at\` datetime null, \`created_at\` datetime not null, constraint \`notifications_user_id_foreign\` foreign key(\`user_id\`) references \`users\`(\`id\`) on update cascade, primary key (\`id\`));`);
    this.addSql(`create index \`notifications_user_id_index\` on \`notifications\` (\`user_id\`);`);
    this.addSql(`create index \`notifications_user_id_created_at_index\` on \`notifications\` (\`user_id\`, \`created_at\`);`);
    this.addSql(`create index \`notifications_user_id_channel_status_index\` on \`notifications\` (\`user_id\`, \`channel\`, \`status\`);`);
    this.addSql(`create index \`notifications_channel_status_next_attempt_at_index\` on \`notifications\` (\`channel\`, \`status\`, \`next_attempt_at\`);`);

    this.addSql(`create table \`invoices\` (\`id\` text not null, \`number\` text not null, \`user_id\` text not null, \`subscription_id\` text null, \`status\` text not null default 'open', \`billing_reason\` text not null default 'subscription_create', \`currency\` text not null, \`issue_date\` text not null, \`due_date\` text not null, \`paid_at\` datetime null, \`subtotal\` integer not null, \`total_amount\` integer not null, \`amount_refunded\` integer not null, \`period_start\` datetime null, \`period_end\` datetime null, \`retry_count\` integer not null default 0, \`next_retry_at\` datetime null, \`created_at\` datetime not null, \`updated_at\` datetime not null, constraint \`invoices_user_id_foreign\` foreign key(\`user_id\`) references \`users\`(\`id\`) on update cascade, constraint \`invoices_subscription_id_foreign\` foreign key(\`subscription_id\`) references \`subscriptions\`(\`id\`) on delete set null on update cascade, primary key (\`id\`));`);
    this.addSql(`create unique index \`invoices_number_unique\` on \`invoices\` (\`number\`);`);
    this.addSql(`create index \`invoices_user_id_index\` on \`invoices\` (\`user_id\`);`);
    this.addSql(`create index \`invoices_subscription_id_index\` on \`invoices\` (\`subscription_id\`);`);
    this.addSql(`create index \`invoices_user_id_issue_date_index\` on \`invoices\` (\`user_id\`, \`issue_date\`);`);
    this.addSql(`create index \`invoices_status_due_date_index\` on \`invoices\` (\`status\`, \`due_date\`);`);

    this.addSql(`create table \`payments\` (\`id\` text not null, \`order_id\` text not null, \`user_id\` text not null, \`subscription_id\` text null, \`invoice_id\` text null, \`status\` text not null default 'pending', \`payment_type\` text not null, \`gross_amount\` integer not null, \`currency\` text not null, \`refunded_amount\` integer not null, \`transaction_id\` text null, \`fraud_status\` text null, \`gateway_status\` text null, \`payment_details\` json not null, \`outcome_unknown\` integer not null default false, \`paid_at\` datetime null, \`expires_at\` datetime null, \`created_at\` datetime not null, \`updated_at\` datetime not null, constraint \`payments_user_id_foreign\` foreign key(\`user_id\`) references \`users\`(\`id\`) on update cascade, constraint \`payments_subscription_id_foreign\` foreign key(\`subscription_id\`) references \`subscriptions\`(\`id\`) on delete set null on update cascade, constraint \`payments_invoice_id_foreign\` foreign key(\`invoice_id\`) references \`invoices\`(\`id\`) on delete set null on update cascade, primary key (\`id\`));`);
    this.addSql(`create unique index \`payments_order_id_unique\` on \`payments\` (\`order_id\`);`);
    this.addSql(`create index \`payments_user_id_index\` on \`payments\` (\`user_id\`);`);
    this.addSql(`create index \`payments_subscription_id_index\` on \`payments\` (\`subscription_id\`);`);
    this.addSql(`create index \`payments_user_id_created_at_index\` on \`payments\` (\`user_id\`, \`created_at\`);`);
    this.addSql(`create index \`payments_status_index\` on \`payments\` (\`status\`);`);
    this.addSql(`create index \`payments_invoice_id_index\` on \`payments\` (\`invoice_id\`);`);

    this.addSql(`create table \`refunds\` (\`id\` text not null, \`payment_id\` text not null, \`refund_key\` text not null, \`amount\` integer not null, \`status\` text not null default 'pending', \`destination\` text not null, \`direct\` integer not null default false, \`reason\` text null, \`created_at\` datetime not null, constraint \`refunds_payment_id_foreign\` foreign key(\`payment_id\`) references \`payments\`(\`id\`) on update cascade, primary key (\`id\`));`);
    this.addSql(`create index \`refunds_payment_id_index\` on \`refunds\` (\`payment_id\`);`);
    this.addSql(`create unique index \`refunds_refund_key_unique\` on \`refunds\` (\`refund_key\`);`);

    this.addSql(`create table \`invoice_lines\` (\`id\` text not null, \`invoice_id\` text not null, \`position\` integer not null default 0, \`description\` text not null, \`kind\` text not null default 'subscription', \`quantity\` integer not null default 1, \`unit_amount\` integer not null, \`amount\` integer not null, \`period_start\` datetime null, \`period_end\` datetime null, constraint \`invoice_lines_invoice_id_foreign\` foreign key(\`invoice_id\`) references \`invoices\`(\`id\`) on update cascade, primary key (\`id\`));`);
    this.addSql(`create index \`invoice_lines_invoice_id_index\` on \`invoice_lines\` (\`invoice_id\`);`);

    this.addSql(`create table \`wallets\` (\`id\` text not null, \`user_id\` text not null, \`balance\` integer not null, \`currency\` text not null, \`is_active\` integer not null default true, \`created_at\` datetime not null, \`updated_at\` datetime not null, constraint \`wallets_user_id_foreign\` foreign key(\`user_id\`) references \`users\`(\`id\`) on update cascade, primary key (\`id\`));`);
    this.addSql(`create index \`wallets_user_id_index\` on \`wallets\` (\`user_id\`);`);
    this.addSql(`create unique index \`wallets_user_id_unique\` on \`wallets\` (\`user_id\`);`);

    this.addSql(`create table \`wallet_transactions\` (\`id\` text not null, \`wallet_id\` text not null, \`kind\` text not null, \`amount\` integer not null, \`balance_after\` integer not null, \`source\` text not null, \`reference_id\` text null, \`description\` text not null default '', \`created_at\` datetime not null, constraint \`wallet_transactions_wallet_id_foreign\` foreign key(\`wallet_id\`) references \`wallets\`(\`id\`) on update cascade, primary key (\`id\`));`);
    this.addSql(`create index \`wallet_transactions_wallet_id_index\` on \`wallet_transactions\` (\`wallet_id\`);`);
    this.addSql(`create index \`wallet_transactions_wallet_id_created_at_index\` on \`wallet_transactions\` (\`wallet_id\`, \`created_at\`);`);
    this.addSql(`create unique index \`wallet_transactions_source_reference_id_unique\` on \`wallet_transactions\` (\`source\`, \`reference_id\`);`);

    this.addSql(`create table \`webhook_logs\` (\`id\` text not null, \`order_id\` text null, \`transaction_status\` text null, \`payload\` text not null, \`ip_address\` text null, \`status\` text not null default 'received', \`error\` text null, \`attempts\` integer not null default 0, \`source\` text not null default 'gateway', \`dedup_key\` text null, \`processed_at\` datetime null, \`created_at\` datetime not null, \`updated_at\` datetime not null, primary key (\`id\`));`);
    this.addSql(`create unique index \`webhook_logs_dedup_key_unique\` on \`webhook_logs\` (\`dedup_key\`);`);
    this.addSql(`create index \`webhook_logs_status_created_at_index\` on \`webhook_logs\` (\`status\`, \`created_at\`);`);
    this.addSql(`create index \`webhook_logs_order_id_index\` on \`webhook_logs\` (\`order_id\`);`);
  }

}
