import { Migration } from '@mikro-orm/migrations';

export class Migration20261128015534 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table \`hosted_sessions\` add column \`last_used_at\` datetime null;`);
    this.addSql(`alter table \`hosted_sessions\` add column \`language\` text null;`);
    this.addSql(`alter table \`hosted_sessions\` add column \`choosing_at\` datetime null;`);
  }

}
