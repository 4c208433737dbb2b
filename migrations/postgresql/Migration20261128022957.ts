import { Migration } from '@mikro-orm/migrations';

export class Migration20261128022957 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table "audit_events" add column "chain_position" int null, add column "previous_hash" varchar(64) null, add column "hash" varchar(64) null;`);
    this.addSql(`alter table "audit_events" add constraint "audit_events_chain_position_unique" unique ("chain_position");`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "audit_events" drop constraint "audit_events_chain_position_unique";`);
    this.addSql(`alter table "audit_events" drop column "chain_position", drop column "previous_hash", drop column "hash";`);
  }

}
