import { Migration } from '@mikro-orm/migrations';

export class Migration20261125032423 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table \`webhook_logs\` add column \`payload_sha256\` text null;`);
    this.addSql(`alter table \`webhook_logs\` add column \`payload_truncated\` integer not null default false;`);
  }

}
