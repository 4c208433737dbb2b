import { Migration } from '@mikro-orm/migrations';

export class Migration20261127235129 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table \`invoices\` add column \`uncollectible_at\` datetime null;`);

    this.addSql(`alter table \`payments\` add column \`charged_back_at\` datetime null;`);
    this.addSql(`alter table \`payments\` add column \`reversed_at\` datetime null;`);
    // Rows from before these columns: their last change is the best date known (the change that
    // charged back, reversed or wrote off was, for nearly all, the last one made to them).
    this.addSql(`update \`payments\` set \`charged_back_at\` = \`updated_at\` where \`status\` = 'charged_back' or \`chargeback_amount\` > 0;`);
    this.addSql(`update \`payments\` set \`reversed_at\` = \`updated_at\` where \`status\` = 'reversed';`);
    this.addSql(`update \`invoices\` set \`uncollectible_at\` = \`updated_at\` where \`status\` = 'uncollectible';`);
  }

}
