import { Migration } from '@mikro-orm/migrations';

export class Migration20261125032414 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table \`topups\` add column \`refunded_amount\` integer not null default 0;`);
  }

}
