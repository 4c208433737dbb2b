import { Migration } from '@mikro-orm/migrations';

export class Migration20261126074415 extends Migration {

  override async up(): Promise<void> {
    // NOTE: hand-edited as Migration20261125032414: existing payments had no fee imposed.
    this.addSql(`alter table \`payments\` add column \`customer_fee\` integer not null default 0;`);
  }

}
