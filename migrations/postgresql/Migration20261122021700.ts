import { Migration } from '@mikro-orm/migrations';

export class Migration20261122021700 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "counters" ("name" varchar(50) not null, "value" int not null default 0, constraint "counters_pkey" primary key ("name"));`);

    this.addSql(`create table "idempotency_keys" ("id" uuid not null, "user_id" varchar(36) not null, "key" varchar(255) not null, "request_hash" varchar(64) not null, "state" varchar(20) not null default 'in_progress', "response_status" int null, "response_body" text null, "created_at" timestamptz not null, constraint "idempotency_keys_pkey" primary key ("id"));`);
    this.addSql(`create index "idempotency_keys_created_at_index" on "idempotency_keys" ("created_at");`);
    this.addSql(`alter table "idempotency_keys" add constraint "idempotency_keys_user_id_key_unique" unique ("user_id", "key");`);

    this.addSql(`create table "login_throttles" ("key" varchar(300) not null, "failures" int not null default 0, "window_start" timestamptz not null, constraint "login_throttles_pkey" primary key ("key"));`);

    this.addSql(`create table "plans" ("id" uuid not null, "name" varchar(200) not null, "slug" varchar(100) not null, "description" text not null default '', "price" numeric(20,2) not null, "currency" varchar(3) not null default 'IDR', "interval" int not null default 1, "interval_unit" varchar(10) not null default 'month', "trial_period_days" int not null default 0, "max_cycles" int not null default 0, "status" varchar(10) not null default 'active', "features" jsonb not null, "sort_order" int not null default 0, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "plans_pkey" primary key ("id"));`);
    this.addSql(`alter table "plans" add constraint "plans_slug_unique" unique ("slug");`);
    this.addSql(`create index "plans_status_sort_order_index" on "plans" ("status", "sort_order");`);

    this.addSql(`create table "sessions" ("id" varchar(100) not null, "data" text not null, "expires_at" timestamptz not null, constraint "sessions_pkey" primary key ("id"));`);
    this.addSql(`create index "sessions_expires_at_index" on "sessions" ("expires_at");`);

    this.addSql(`create table "users" ("id" uuid not null, "username" varchar(150) not null, "email" varchar(254) null, "password_hash" text not null, "is_staff" boolean not null default false, "first_name" varchar(150) not null default '', "last_name" varchar(150) not null default '', "phone" varchar(50) null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "users_pkey" primary key ("id"));`);
    this.addSql(`alter table "users" add constraint "users_username_unique" unique ("username");`);

    this.addSql(`create table "topups" ("id" uuid not null, "order_id" varchar(50) not null, "user_id" uuid not null, "amount" numeric(20,2) not null, "currency" varchar(3) not null, "status" varchar(20) not null default 'pending', "payment_type" varchar(20) not null, "bank" varchar(20) null, "payment_details" jsonb not null, "transaction_id" varchar(100) null, "outcome_unknown" boolean not null default false, "paid_at" timestamptz null, "expires_at" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "topups_pkey" primary key ("id"));`);
    this.addSql(`alter table "topups" add constraint "topups_order_id_unique" unique ("order_id");`);
    this.addSql(`create index "topups_user_id_created_at_index" on "topups" ("user_id", "created_at");`);

    this.addSql(`create table "subscriptions" ("id" uuid not null, "user_id" uuid not null, "plan_id" uuid not null, "status" varchar(20) not null default 'pending', "live_user_id" varchar(36) null, "payment_type" varchar(20) not null, "bank" varchar(20) null, "card_token" varchar(200) null, "current_period_start" timestamptz null, "current_period_end" timestamptz null, "next_billing_date" timestamptz null, "billing_anchor" timestamptz null, "trial_end" timestamptz null, "trial_will_end_notified_at" timestamptz null, "cancel_at_period_end" boolean not null default false, "canceled_at" timestamptz null, "cancel_reason" varchar(500) null, "paused_at" timestamptz null, "pending_plan_id" uuid null, "cycles_completed" int not null default 0, "metadata" jsonb not null, "customer_details" jsonb not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "subscriptions_pkey" primary key ("id"));`);
    this.addSql(`alter table "subscriptions" add constraint "subscriptions_live_user_id_unique" unique ("live_user_id");`);
    this.addSql(`create index "subscriptions_user_id_created_at_index" on "subscriptions" ("user_id", "created_at");`);
    this.addSql(`create index "subscriptions_status_next_billing_date_index" on "subscriptions" ("status", "next_billing_date");`);

    this.addSql(`create table "notifications" ("id" uuid not null, "user_id" uuid not null, "notification_type" varchar(40) not null, "channel" varchar(10) not null, "status" varchar(10) not null default 'queued', "title" varchar(200) not null, "message" text not null, "data" jsonb not null, "read_at" timestamptz null, "sent_at" timestamptz null, "attempts" int not null default 0, "last_error" text null, "next_attempt_at" timestamptz null, "created_at" timestamptz not null, constraint "notifications_pkey" primary key ("id"));`);
    this.addSql(`create index "notifications_user_id_created_at_index" on "notifications" ("user_id", "created_at");`);
    this.addSql(`create index "notifications_user_id_channel_status_index" on "notifications" ("user_id", "channel", "status");`);
    this.addSql(`create index "notifications_channel_status_next_attempt_at_index" on "notifications" ("channel", "status", "next_attempt_at");`);

    this.addSql(`create table "invoices" ("id" uuid not null, "number" varchar(30) not null, "user_id" uuid not null, "subscription_id" uuid null, "status" varchar(20) not null default 'open', "billing_reason" varchar(30) not null default 'subscription_create', "currency" varchar(3) not null, "issue_date" varchar(10) not null, "due_date" varchar(10) not null, "paid_at" timestamptz null, "subtotal" numeric(20,2) not null, "total_amount" numeric(20,2) not null, "amount_refunded" numeric(20,2) not null, "period_start" timestamptz null, "period_end" timestamptz null, "retry_count" int not null default 0, "next_retry_at" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "invoices_pkey" primary key ("id"));`);
    this.addSql(`alter table "invoices" add constraint "invoices_number_unique" unique ("number");`);
    this.addSql(`create index "invoices_user_id_issue_date_index" on "invoices" ("user_id", "issue_date");`);
    this.addSql(`create index "invoices_status_due_date_index" on "invoices" ("status", "due_date");`);

    this.addSql(`create table "payments" ("id" uuid not null, "order_id" varchar(50) not null, "user_id" uuid not null, "subscription_id" uuid null, "invoice_id" uuid null, "status" varchar(20) not null default 'pending', "payment_type" varchar(20) not null, "gross_amount" numeric(20,2) not null, "currency" varchar(3) not null, "refunded_amount" numeric(20,2) not null, "transaction_id" varchar(100) null, "fraud_status" varchar(20) null, "gateway_status" varchar(30) null, "payment_details" jsonb not null, "outcome_unknown" boolean not null default false, "paid_at" timestamptz null, "expires_at" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "payments_pkey" primary key ("id"));`);
    this.addSql(`alter table "payments" add constraint "payments_order_id_unique" unique ("order_id");`);
    this.addSql(`create index "payments_user_id_created_at_index" on "payments" ("user_id", "created_at");`);
    this.addSql(`create index "payments_status_index" on "payments" ("status");`);
    this.addSql(`create index "payments_invoice_id_index" on "payments" ("invoice_id");`);

    this.addSql(`create table "refunds" ("id" uuid not null, "payment_id" uuid not null, "refund_key" varchar(80) not null, "amount" numeric(20,2) not null, "status" varchar(20) not null default 'pending', "destination" varchar(10) not null, "direct" boolean not null default false, "reason" varchar(255) null, "created_at" timestamptz not null, constraint "refunds_pkey" primary key ("id"));`);
    this.addSql(`alter table "refunds" add constraint "refunds_refund_key_unique" unique ("refund_key");`);

    this.addSql(`create table "invoice_lines" ("id" uuid not null, "invoice_id" uuid not null, "position" int not null default 0, "description" varchar(500) not null, "kind" varchar(20) not null default 'subscription', "quantity" int not null default 1, "unit_amount" numeric(20,2) not null, "amount" numeric(20,2) not null, "period_start" timestamptz null, "period_end" timestamptz null, constraint "invoice_lines_pkey" primary key ("id"));`);

    this.addSql(`create table "wallets" ("id" uuid not null, "user_id" uuid not null, "balance" numeric(20,2) not null, "currency" varchar(3) not null, "is_active" boolean not null default true, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "wallets_pkey" primary key ("id"));`);
    this.addSql(`alter table "wallets" add constraint "wallets_user_id_unique" unique ("user_id");`);

    this.addSql(`create table "wallet_transactions" ("id" uuid not null, "wallet_id" uuid not null, "kind" varchar(10) not null, "amount" numeric(20,2) not null, "balance_after" numeric(20,2) not null, "source" varchar(20) not null, "reference_id" varchar(100) null, "description" varchar(500) not null default '', "created_at" timestamptz not null, constraint "wallet_transactions_pkey" primary key ("id"));`);
    this.addSql(`create index "wallet_transactions_wallet_id_created_at_index" on "wallet_transactions" ("wallet_id", "created_at");`);
    this.addSql(`alter table "wallet_transactions" add constraint "wallet_transactions_source_reference_id_unique" unique ("source", "reference_id");`);

    this.addSql(`create table "webhook_logs" ("id" uuid not null, "order_id" varchar(100) null, "transaction_status" varchar(50) null, "payload" text not null, "ip_address" varchar(64) null, "status" varchar(20) not null default 'received', "error" text null, "attempts" int not null default 0, "source" varchar(20) not null default 'gateway', "dedup_key" varchar(250) null, "processed_at" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "webhook_logs_pkey" primary key ("id"));`);
    this.addSql(`alter table "webhook_logs" add constraint "webhook_logs_dedup_key_unique" unique ("dedup_key");`);
    this.addSql(`create index "webhook_logs_status_created_at_index" on "webhook_logs" ("status", "created_at");`);
    this.addSql(`create index "webhook_logs_order_id_index" on "webhook_logs" ("order_id");`);

    this.addSql(`alter table "topups" add constraint "topups_user_id_foreign" foreign key ("user_id") references "users" ("id") on update cascade;`);

    this.addSql(`alter table "subscriptions" add constraint "subscriptions_user_id_foreign" foreign key ("user_id") references "users" ("id") on update cascade;`);
    this.addSql(`alter table "subscriptions" add constraint "subscriptions_plan_id_foreign" foreign key ("plan_id") references "plans" ("id") on update cascade;`);
    this.addSql(`alter table "subscriptions" add constraint "subscriptions_pending_plan_id_foreign" foreign key ("pending_plan_id") references "plans" ("id") on update cascade on delete set null;`);

    this.addSql(`alter table "notifications" add constraint "notifications_user_id_foreign" foreign key ("user_id") references "users" ("id") on update cascade;`);

    this.addSql(`alter table "invoices" add constraint "invoices_user_id_foreign" foreign key ("user_id") references "users" ("id") on update cascade;`);
    this.addSql(`alter table "invoices" add constraint "invoices_subscription_id_foreign" foreign key ("subscription_id") references "subscriptions" ("id") on update cascade on delete set null;`);

    this.addSql(`alter table "payments" add constraint "payments_user_id_foreign" foreign key ("user_id") references "users" ("id") on update cascade;`);
    this.addSql(`alter table "payments" add constraint "payments_subscription_id_foreign" foreign key ("subscription_id") references "subscriptions" ("id") on update cascade on delete set null;`);
    this.addSql(`alter table "payments" add constraint "payments_invoice_id_foreign" foreign key ("invoice_id") references "invoices" ("id") on update cascade on delete set null;`);

    this.addSql(`alter table "refunds" add constraint "refunds_payment_id_foreign" foreign key ("payment_id") references "payments" ("id") on update cascade;`);

    this.addSql(`alter table "invoice_lines" add constraint "invoice_lines_invoice_id_foreign" foreign key ("invoice_id") references "invoices" ("id") on update cascade;`);

    this.addSql(`alter table "wallets" add constraint "wallets_user_id_foreign" foreign key ("user_id") references "users" ("id") on update cascade;`);

    this.addSql(`alter table "wallet_transactions" add constraint "wallet_transactions_wallet_id_foreign" foreign key ("wallet_id") references "wallets" ("id") on update cascade;`);
  }

}
