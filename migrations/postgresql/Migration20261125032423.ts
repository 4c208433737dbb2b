import { Migration } from '@mikro-orm/migrations';

export class Migration20261125032423 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table "webhook_logs" add column "payload_sha256" varchar(64) null, add column "payload_truncated" boolean not null default false;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "webhook_logs" drop column "payload_sha256", drop column "payload_truncated";`);
  }

}
