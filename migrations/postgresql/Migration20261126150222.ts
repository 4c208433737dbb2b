import { Migration } from '@mikro-orm/migrations';

export class Migration20261126150222 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table "wallets" add column "entries" int not null default 0;`);

    this.addSql(`alter table "wallet_transactions" add column "position" int not null default 0;`);
    // NOTE: hand-edited: the entries written before number their ledger in the order wallet
    // verify read it until now (created_at, then id), and each wallet counts its entries.
    this.addSql(`update "wallet_transactions" as t set "position" = numbered.n from (select "id", row_number() over (partition by "wallet_id" order by "created_at", "id") as n from "wallet_transactions") as numbered where numbered."id" = t."id";`);
    this.addSql(`update "wallets" set "entries" = (select count(*) from "wallet_transactions" where "wallet_transactions"."wallet_id" = "wallets"."id");`);
    this.addSql(`create index "wallet_transactions_wallet_id_position_index" on "wallet_transactions" ("wallet_id", "position");`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "wallets" drop column "entries";`);

    this.addSql(`drop index "wallet_transactions_wallet_id_position_index";`);
    this.addSql(`alter table "wallet_transactions" drop column "position";`);
  }

}
