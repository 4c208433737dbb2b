import { Migration } from '@mikro-orm/migrations';

export class Migration20261202010926 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table \`billable_metrics\` (\`id\` text not null, \`code\` text not null, \`name\` text not null, \`description\` text not null default '', \`aggregation\` text not null, \`field\` text null, \`filters\` json null, \`status\` text not null default 'active', \`archived_at\` datetime null, \`created_at\` datetime not null, \`updated_at\` datetime not null, primary key (\`id\`));`);
    this.addSql(`create unique index \`billable_metrics_code_unique\` on \`billable_metrics\` (\`code\`);`);

    this.addSql(`alter table \`plans\` add column \`charges\` json not null default '[]';`);

    this.addSql(`alter table \`subscriptions\` add column \`usage_billed_until\` datetime null;`);
  }

}
