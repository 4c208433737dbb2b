import { Migration } from '@mikro-orm/migrations';

export class Migration20261127223538 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table "subscriptions" add column "last_renewal_failure" jsonb null;`);

    this.addSql(`alter table "invoices" add column "seller_tax_identity" jsonb null;`);

    this.addSql(`alter table "invoice_lines" add column "subject" jsonb null;`);

    this.addSql(`alter table "credit_notes" add column "tax_base" numeric(20,2) not null default 0, add column "tax_rounding" numeric(20,2) not null default 0;`);
    // Credit notes made before: the DPP they took off is what their PPN did not.
    this.addSql(`update "credit_notes" set "tax_base" = "amount" - "tax_amount";`);
    this.addSql(`alter table "credit_notes" alter column "tax_base" drop default, alter column "tax_rounding" drop default;`);

    this.addSql(`alter table "credit_note_lines" add column "subject" jsonb null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "subscriptions" drop column "last_renewal_failure";`);

    this.addSql(`alter table "invoices" drop column "seller_tax_identity";`);

    this.addSql(`alter table "invoice_lines" drop column "subject";`);

    this.addSql(`alter table "credit_notes" drop column "tax_base", drop column "tax_rounding";`);

    this.addSql(`alter table "credit_note_lines" drop column "subject";`);
  }

}
