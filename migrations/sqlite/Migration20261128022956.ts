import { Migration } from '@mikro-orm/migrations';

export class Migration20261128022956 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table \`audit_events\` add column \`chain_position\` integer null;`);
    this.addSql(`alter table \`audit_events\` add column \`previous_hash\` text null;`);
    this.addSql(`alter table \`audit_events\` add column \`hash\` text null;`);
    this.addSql(`create unique index \`audit_events_chain_position_unique\` on \`audit_events\` (\`chain_position\`);`);
  }

}
