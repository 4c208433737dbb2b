import { Migration } from '@mikro-orm/migrations';

export class Migration20261126074416 extends Migration {

  override async up(): Promise<void> {
    // NOTE: hand-edited as Migration20261125032414: existing payments had no fee imposed; the
    // entity sets it on create, so the column keeps no default.
    this.addSql(`alter table "payments" add column "customer_fee" numeric(20,2) not null default 0;`);
    this.addSql(`alter table "payments" alter column "customer_fee" drop default;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "payments" drop column "customer_fee";`);
  }

}
