import { Migration } from '@mikro-orm/migrations';

export class Migration20261122022508 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table \`delivery_attempts\` (\`id\` text not null, \`notification_id\` text not null, \`attempted_at\` datetime not null, \`outcome\` text not null, \`http_status\` integer null, \`error\` text null, \`duration_ms\` integer not null default 0, constraint \`delivery_attempts_notification_id_foreign\` foreign key(\`notification_id\`) references \`notifications\`(\`id\`) on update cascade, primary key (\`id\`));`);
    this.addSql(`create index \`delivery_attempts_notification_id_index\` on \`delivery_attempts\` (\`notification_id\`);`);
    this.addSql(`create index \`delivery_attempts_notification_id_attempted_at_index\` on \`delivery_attempts\` (\`notification_id\`, \`attempted_at\`);`);
  }

}
