import { Migration } from '@mikro-orm/migrations';

export class Migration20261124001418 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table \`credit_notes\` (\`id\` text not null, \`number\` text not null, \`user_id\` text not null, \`invoice_id\` text not null, \`payment_id\` text null, \`refund_id\` text null, \`wallet_transaction_id\` text null, \`reason\` text not null, \`memo\` text null, \`currency\` text not null, \`amount\` integer not null, \`issued_at\` datetime not null, \`created_at\` datetime not null, constraint \`credit_notes_user_id_foreign\` foreign key(\`user_id\`) references \`users\`(\`id\`) on update cascade, constraint \`credit_notes_invoice_id_foreign\` foreign key(\`invoice_id\`) references \`invoices\`(\`id\`) on update cascade, constraint \`credit_notes_payment_id_foreign\` foreign key(\`payment_id\`) references \`payments\`(\`id\`) on delete set null on update cascade, constraint \`credit_notes_refund_id_foreign\` foreign key(\`refund_id\`) references \`refunds\`(\`id\`) on delete set null on update cascade, constraint \`credit_notes_wallet_transaction_id_foreign\` foreign key(\`wallet_transaction_id\`) references \`wallet_transactions\`(\`id\`) on delete set null on update cascade, primary key (\`id\`));`);
    this.addSql(`create unique index \`credit_notes_number_unique\` on \`credit_notes\` (\`number\`);`);
    this.addSql(`create index \`credit_notes_user_id_index\` on \`credit_notes\` (\`user_id\`);`);
    this.addSql(`create index \`credit_notes_wallet_transaction_id_index\` on \`credit_notes\` (\`wallet_transaction_id\`);`);
    this.addSql(`create index \`credit_notes_user_id_issued_at_index\` on \`credit_notes\` (\`user_id\`, \`issued_at\`);`);
    this.addSql(`create index \`credit_notes_invoice_id_index\` on \`credit_notes\` (\`invoice_id\`);`);
    this.addSql(`create index \`credit_notes_payment_id_index\` on \`credit_notes\` (\`payment_id\`);`);
    this.addSql(`create index \`credit_notes_refund_id_index\` on \`credit_notes\` (\`refund_id\`);`);
    this.addSql(`create unique index \`credit_notes_wallet_transaction_payment_unique\` on \`credit_notes\` (\`wallet_transaction_id\`, \`payment_id\`);`);

    this.addSql(`create table \`credit_note_lines\` (\`id\` text not null, \`credit_note_id\` text not null, \`position\` integer not null default 0, \`description\` text not null, \`amount\` integer not null, constraint \`credit_note_lines_credit_note_id_foreign\` foreign key(\`credit_note_id\`) references \`credit_notes\`(\`id\`) on update cascade, primary key (\`id\`));`);
    this.addSql(`create index \`credit_note_lines_credit_note_id_index\` on \`credit_note_lines\` (\`credit_note_id\`);`);
  }

}
