import { Migration } from '@mikro-orm/migrations';

export class Migration20261126143209 extends Migration {

  override async up(): Promise<void> {
    // NOTE: hand-edited as Migration20261126104044: no invoice or credit note carried PPN before.
    this.addSql(`alter table \`plans\` add column \`tax_behavior\` text not null default 'none';`);

    this.addSql(`alter table \`users\` add column \`tax_profile\` json null;`);

    this.addSql(`alter table \`invoices\` add column \`tax_behavior\` text not null default 'none';`);
    this.addSql(`alter table \`invoices\` add column \`tax_rate\` integer not null default 0;`);
    this.addSql(`alter table \`invoices\` add column \`tax_base\` integer not null default 0;`);
    this.addSql(`alter table \`invoices\` add column \`other_tax_base\` integer not null default 0;`);
    this.addSql(`alter table \`invoices\` add column \`tax_amount\` integer not null default 0;`);
    this.addSql(`alter table \`invoices\` add column \`tax_rounding\` integer not null default 0;`);
    this.addSql(`alter table \`invoices\` add column \`buyer_tax_profile\` json null;`);
    this.addSql(`alter table \`invoices\` add column \`tax_invoice_number\` text null;`);
    this.addSql(`alter table \`invoices\` add column \`tax_exported_at\` datetime null;`);
    this.addSql(`create index \`invoices_status_paid_at_index\` on \`invoices\` (\`status\`, \`paid_at\`);`);

    this.addSql(`alter table \`credit_notes\` add column \`tax_amount\` integer not null default 0;`);
    this.addSql(`alter table \`credit_notes\` add column \`tax_action\` text not null default 'none';`);
  }

}
