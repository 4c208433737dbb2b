import { Migration } from '@mikro-orm/migrations';

export class Migration20261126104044 extends Migration {

  override async up(): Promise<void> {
    // NOTE: hand-edited as Migration20261126074416: nothing was charged back before; the entity
    // sets it on create, so the column keeps no default.
    this.addSql(`alter table "payments" add column "chargeback_amount" numeric(20,2) not null default 0;`);
    this.addSql(`alter table "payments" alter column "chargeback_amount" drop default;`);

    this.addSql(`alter table "refunds" add column "keep_subscription" boolean not null default false, add column "gateway_status_code" varchar(10) null, add column "gateway_message" varchar(255) null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "payments" drop column "chargeback_amount";`);

    this.addSql(`alter table "refunds" drop column "keep_subscription", drop column "gateway_status_code", drop column "gateway_message";`);
  }

}
