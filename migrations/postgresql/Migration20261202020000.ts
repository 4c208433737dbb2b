import { Migration } from '@mikro-orm/migrations';

/**
 * The usage event store's raw tables (src/services/usage/event-store.ts), written by hand: no
 * entity maps them (events are written and read by set-based SQL only). usage_events is
 * partitioned by month of occurred_at, with a DEFAULT partition for anything outside the months
 * made ahead; the partitions of the month before this one to three months ahead are made here,
 * later ones by eventStore.ensurePartitions (at start-up and by the billing run).
 */
export class Migration20261202020000 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "usage_event_keys" ("customer_id" uuid not null, "transaction_id" text collate "C" not null, "body_hash" text not null, "subscription_id" uuid not null, constraint "usage_event_keys_pkey" primary key ("customer_id", "transaction_id"));`);

    this.addSql(`create table "usage_events" ("subscription_id" uuid not null, "customer_id" uuid not null, "metric_id" uuid not null, "transaction_id" text collate "C" not null, "occurred_at" timestamptz not null, "value_micro" bigint null, "unique_value" text null, "counted" boolean not null, "properties" jsonb not null default '{}', "received_at" timestamptz not null) partition by range ("occurred_at");`);
    this.addSql(`create index "usage_events_window_index" on "usage_events" ("subscription_id", "metric_id", "occurred_at");`);
    this.addSql(`create table "usage_events_default" partition of "usage_events" default;`);
    this.addSql(`do $$
declare
  first date := date_trunc('month', now() at time zone 'UTC')::date - interval '1 month';
  m date;
begin
  for k in 0..4 loop
    m := first + make_interval(months => k);
    execute format('create table if not exists %I partition of usage_events for values from (%L) to (%L)',
      'usage_events_y' || to_char(m, 'YYYY') || 'm' || to_char(m, 'MM'),
      m::timestamp at time zone 'UTC', (m + interval '1 month')::timestamp at time zone 'UTC');
  end loop;
end $$;`);

    this.addSql(`create table "usage_hourly" ("subscription_id" uuid not null, "metric_id" uuid not null, "hour" timestamptz not null, "events" bigint not null, "sum_micro" numeric(40,0) not null, "max_micro" bigint null, "latest_at" timestamptz not null, "latest_tx" text collate "C" not null, "latest_micro" bigint null, constraint "usage_hourly_pkey" primary key ("subscription_id", "metric_id", "hour"));`);

    this.addSql(`create table "usage_hourly_values" ("subscription_id" uuid not null, "metric_id" uuid not null, "hour" timestamptz not null, "value" text not null, constraint "usage_hourly_values_pkey" primary key ("subscription_id", "metric_id", "hour", "value"));`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "usage_hourly_values";`);
    this.addSql(`drop table if exists "usage_hourly";`);
    this.addSql(`drop table if exists "usage_events" cascade;`);
    this.addSql(`drop table if exists "usage_event_keys";`);
  }

}
