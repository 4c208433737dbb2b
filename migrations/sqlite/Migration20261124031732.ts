import { Migration } from '@mikro-orm/migrations';

export class Migration20261124031732 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table \`payments\` add column \`cancel_requested_at\` datetime null;`);
  }

}
