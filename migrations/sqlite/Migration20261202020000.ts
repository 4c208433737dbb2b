import { Migration } from '@mikro-orm/migrations';

/**
 * The usage event store's raw tables (src/services/usage/event-store.ts), written by hand: no
 * entity maps them. One usage_events table on SQLite; times as epoch milliseconds like every
 * date column here.
 */
export class Migration20261202020000 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table \`usage_event_keys\` (\`customer_id\` text not null, \`transaction_id\` text not null, \`body_hash\` text not null, \`subscription_id\` text not null, primary key (\`customer_id\`, \`transaction_id\`)) without rowid;`);

    this.addSql(`create table \`usage_events\` (\`subscription_id\` text not null, \`customer_id\` text not null, \`metric_id\` text not null, \`transaction_id\` text not null, \`occurred_at\` datetime not null, \`value_micro\` integer null, \`unique_value\` text null, \`counted\` integer not null, \`properties\` json not null default '{}', \`received_at\` datetime not null);`);
    this.addSql(`create index \`usage_events_window_index\` on \`usage_events\` (\`subscription_id\`, \`metric_id\`, \`occurred_at\`);`);

    this.addSql(`create table \`usage_hourly\` (\`subscription_id\` text not null, \`metric_id\` text not null, \`hour\` datetime not null, \`events\` integer not null, \`sum_micro\` integer not null, \`max_micro\` integer null, \`latest_at\` datetime not null, \`latest_tx\` text not null, \`latest_micro\` integer null, primary key (\`subscription_id\`, \`metric_id\`, \`hour\`)) without rowid;`);

    this.addSql(`create table \`usage_hourly_values\` (\`subscription_id\` text not null, \`metric_id\` text not null, \`hour\` datetime not null, \`value\` text not null, primary key (\`subscription_id\`, \`metric_id\`, \`hour\`, \`value\`)) without rowid;`);
  }

}
