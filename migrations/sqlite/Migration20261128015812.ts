import { Migration } from '@mikro-orm/migrations';

export class Migration20261128015812 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table \`users\` add column \`external_id\` text null;`);
    this.addSql(`alter table \`users\` add column \`locale\` text null;`);
    this.addSql(`create unique index \`users_external_id_unique\` on \`users\` (\`external_id\`);`);
  }

}
