import { Migration } from '@mikro-orm/migrations';

export class Migration20261123211506 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table \`subscriptions\` add column \`card_token_expires_at\` datetime null;`);
    this.addSql(`alter table \`subscriptions\` add column \`card_expiry_notified_token\` text null;`);

    this.addSql(`alter table \`payments\` add column \`failure_reason\` text null;`);

    this.addSql(`alter table \`refunds\` add column \`method\` text not null default 'refund';`);
  }

}
