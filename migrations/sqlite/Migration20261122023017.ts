import { Migration } from '@mikro-orm/migrations';

export class Migration20261122023017 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create index \`invoices_status_next_retry_at_index\` on \`invoices\` (\`status\`, \`next_retry_at\`);`);
    this.addSql(`create unique index \`invoices_subscription_period_unique\` on \`invoices\` (\`subscription_id\`, \`billing_reason\`, \`period_start\`);`);
  }

}
