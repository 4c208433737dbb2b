import { Migration } from '@mikro-orm/migrations';

export class Migration20261123211506 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table "subscriptions" add column "card_token_expires_at" timestamptz null, add column "card_expiry_notified_token" varchar(200) null;`);

    this.addSql(`alter table "payments" add column "failure_reason" varchar(50) null;`);

    this.addSql(`alter table "refunds" add column "method" varchar(20) not null default 'refund';`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "payments" drop column "failure_reason";`);

    this.addSql(`alter table "refunds" drop column "method";`);

    this.addSql(`alter table "subscriptions" drop column "card_token_expires_at", drop column "card_expiry_notified_token";`);
  }

}
