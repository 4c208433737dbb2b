import { Migration } from '@mikro-orm/migrations';

export class Migration20261127223537 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table \`subscriptions\` add column \`last_renewal_failure\` json null;`);

    this.addSql(`alter table \`invoices\` add column \`seller_tax_identity\` json null;`);

    this.addSql(`alter table \`invoice_lines\` add column \`subject\` json null;`);

    this.addSql(`alter table \`credit_notes\` add column \`tax_base\` integer not null default 0;`);
    this.addSql(`alter table \`credit_notes\` add column \`tax_rounding\` integer not null default 0;`);

    // Credit notes made before: the DPP they took off is what their PPN did not.
    this.addSql(`update \`credit_notes\` set \`tax_base\` = \`amount\` - \`tax_amount\`;`);

    this.addSql(`alter table \`credit_note_lines\` add column \`subject\` json null;`);
  }

}
