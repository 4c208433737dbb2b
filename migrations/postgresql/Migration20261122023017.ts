import { Migration } from '@mikro-orm/migrations';

export class Migration20261122023017 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create index "invoices_status_next_retry_at_index" on "invoices" ("status", "next_retry_at");`);
    this.addSql(`alter table "invoices" add constraint "invoices_subscription_period_unique" unique ("subscription_id", "billing_reason", "period_start");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index "invoices_status_next_retry_at_index";`);
    this.addSql(`alter table "invoices" drop constraint "invoices_subscription_period_unique";`);
  }

}
