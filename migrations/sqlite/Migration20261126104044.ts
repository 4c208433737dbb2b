import { Migration } from '@mikro-orm/migrations';

export class Migration20261126104044 extends Migration {

  override async up(): Promise<void> {
    // NOTE: hand-edited as Migration20261126074415: nothing was charged back before.
    this.addSql(`alter table \`payments\` add column \`chargeback_amount\` integer not null default 0;`);

    this.addSql(`alter table \`refunds\` add column \`keep_subscription\` integer not null default false;`);
    this.addSql(`alter table \`refunds\` add column \`gateway_status_code\` text null;`);
    this.addSql(`alter table \`refunds\` add column \`gateway_message\` text null;`);
  }

}
