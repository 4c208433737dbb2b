import { Migration } from '@mikro-orm/migrations';

export class Migration20261127235129 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table "invoices" add column "uncollectible_at" timestamptz null;`);

    this.addSql(`alter table "payments" add column "charged_back_at" timestamptz null, add column "reversed_at" timestamptz null;`);
    // Rows from before these columns: their last change is the best date known (the change that
    // charged back, reversed or wrote off was, for nearly all, the last one made to them).
    this.addSql(`update "payments" set "charged_back_at" = "updated_at" where "status" = 'charged_back' or "chargeback_amount" > 0;`);
    this.addSql(`update "payments" set "reversed_at" = "updated_at" where "status" = 'reversed';`);
    this.addSql(`update "invoices" set "uncollectible_at" = "updated_at" where "status" = 'uncollectible';`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "invoices" drop column "uncollectible_at";`);

    this.addSql(`alter table "payments" drop column "charged_back_at", drop column "reversed_at";`);
  }

}
