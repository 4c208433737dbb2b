import { Migration } from '@mikro-orm/migrations';

export class Migration20261126143209 extends Migration {

  override async up(): Promise<void> {
    // NOTE: hand-edited as Migration20261126104044: no invoice or credit note carried PPN before;
    // the entities set the money columns on create, so they keep no default.
    this.addSql(`alter table "plans" add column "tax_behavior" varchar(10) not null default 'none';`);

    this.addSql(`alter table "users" add column "tax_profile" jsonb null;`);

    this.addSql(`alter table "invoices" add column "tax_behavior" varchar(10) not null default 'none', add column "tax_rate" numeric(20,2) not null default 0, add column "tax_base" numeric(20,2) not null default 0, add column "other_tax_base" numeric(20,2) not null default 0, add column "tax_amount" numeric(20,2) not null default 0, add column "tax_rounding" numeric(20,2) not null default 0, add column "buyer_tax_profile" jsonb null, add column "tax_invoice_number" varchar(17) null, add column "tax_exported_at" timestamptz null;`);
    this.addSql(`alter table "invoices" ${['tax_rate', 'tax_base', 'other_tax_base', 'tax_amount', 'tax_rounding'].map((c) => `alter column "${c}" drop default`).join(', ')};`);
    this.addSql(`create index "invoices_status_paid_at_index" on "invoices" ("status", "paid_at");`);

    this.addSql(`alter table "credit_notes" add column "tax_amount" numeric(20,2) not null default 0, add column "tax_action" varchar(30) not null default 'none';`);
    this.addSql(`alter table "credit_notes" alter column "tax_amount" drop default;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "plans" drop column "tax_behavior";`);

    this.addSql(`alter table "users" drop column "tax_profile";`);

    this.addSql(`drop index "invoices_status_paid_at_index";`);
    this.addSql(`alter table "invoices" drop column "tax_behavior", drop column "tax_rate", drop column "tax_base", drop column "other_tax_base", drop column "tax_amount", drop column "tax_rounding", drop column "buyer_tax_profile", drop column "tax_invoice_number", drop column "tax_exported_at";`);

    this.addSql(`alter table "credit_notes" drop column "tax_amount", drop column "tax_action";`);
  }

}
