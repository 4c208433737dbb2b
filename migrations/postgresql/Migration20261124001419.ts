import { Migration } from '@mikro-orm/migrations';

export class Migration20261124001419 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "credit_notes" ("id" uuid not null, "number" varchar(30) not null, "user_id" uuid not null, "invoice_id" uuid not null, "payment_id" uuid null, "refund_id" uuid null, "wallet_transaction_id" uuid null, "reason" varchar(30) not null, "memo" varchar(500) null, "currency" varchar(3) not null, "amount" numeric(20,2) not null, "issued_at" timestamptz not null, "created_at" timestamptz not null, constraint "credit_notes_pkey" primary key ("id"));`);
    this.addSql(`alter table "credit_notes" add constraint "credit_notes_number_unique" unique ("number");`);
    this.addSql(`create index "credit_notes_user_id_issued_at_index" on "credit_notes" ("user_id", "issued_at");`);
    this.addSql(`create index "credit_notes_invoice_id_index" on "credit_notes" ("invoice_id");`);
    this.addSql(`create index "credit_notes_payment_id_index" on "credit_notes" ("payment_id");`);
    this.addSql(`create index "credit_notes_refund_id_index" on "credit_notes" ("refund_id");`);
    this.addSql(`alter table "credit_notes" add constraint "credit_notes_wallet_transaction_payment_unique" unique ("wallet_transaction_id", "payment_id");`);

    this.addSql(`create table "credit_note_lines" ("id" uuid not null, "credit_note_id" uuid not null, "position" int not null default 0, "description" varchar(500) not null, "amount" numeric(20,2) not null, constraint "credit_note_lines_pkey" primary key ("id"));`);

    this.addSql(`alter table "credit_notes" add constraint "credit_notes_user_id_foreign" foreign key ("user_id") references "users" ("id") on update cascade;`);
    this.addSql(`alter table "credit_notes" add constraint "credit_notes_invoice_id_foreign" foreign key ("invoice_id") references "invoices" ("id") on update cascade;`);
    this.addSql(`alter table "credit_notes" add constraint "credit_notes_payment_id_foreign" foreign key ("payment_id") references "payments" ("id") on update cascade on delete set null;`);
    this.addSql(`alter table "credit_notes" add constraint "credit_notes_refund_id_foreign" foreign key ("refund_id") references "refunds" ("id") on update cascade on delete set null;`);
    this.addSql(`alter table "credit_notes" add constraint "credit_notes_wallet_transaction_id_foreign" foreign key ("wallet_transaction_id") references "wallet_transactions" ("id") on update cascade on delete set null;`);

    this.addSql(`alter table "credit_note_lines" add constraint "credit_note_lines_credit_note_id_foreign" foreign key ("credit_note_id") references "credit_notes" ("id") on update cascade;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "credit_note_lines" drop constraint "credit_note_lines_credit_note_id_foreign";`);

    this.addSql(`drop table if exists "credit_notes" cascade;`);

    this.addSql(`drop table if exists "credit_note_lines" cascade;`);
  }

}
