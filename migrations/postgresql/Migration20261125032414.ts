import { Migration } from '@mikro-orm/migrations';

export class Migration20261125032414 extends Migration {

  override async up(): Promise<void> {
    // NOTE: hand-edited: existing top-ups start at zero refunded; the entity sets it on create,
    // so the column keeps no default (as credited_amount, Migration20261123223038).
    this.addSql(`alter table "topups" add column "refunded_amount" numeric(20,2) not null default 0;`);
    this.addSql(`alter table "topups" alter column "refunded_amount" drop default;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "topups" drop column "refunded_amount";`);
  }

}
