import { Migration } from '@mikro-orm/migrations';

export class Migration20261128015534 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table "hosted_sessions" add column "last_used_at" timestamptz null, add column "language" varchar(2) null, add column "choosing_at" timestamptz null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "hosted_sessions" drop column "last_used_at", drop column "language", drop column "choosing_at";`);
  }

}
