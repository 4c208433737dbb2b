import { Migration } from '@mikro-orm/migrations';

export class Migration20261126234113 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table \`hosted_sessions\` (\`id\` text not null, \`kind\` text not null, \`user_id\` text not null, \`token_hash\` text not null, \`plan_id\` text null, \`topup_amount\` text null, \`payment_type\` text null, \`success_url\` text null, \`cancel_url\` text null, \`return_url\` text null, \`expires_at\` datetime not null, \`opened_at\` datetime null, \`browser_secret_hash\` text null, \`subscription_id\` text null, \`topup_id\` text null, \`created_at\` datetime not null, constraint \`hosted_sessions_user_id_foreign\` foreign key(\`user_id\`) references \`users\`(\`id\`) on update cascade, constraint \`hosted_sessions_plan_id_foreign\` foreign key(\`plan_id\`) references \`plans\`(\`id\`) on delete set null on update cascade, constraint \`hosted_sessions_subscription_id_foreign\` foreign key(\`subscription_id\`) references \`subscriptions\`(\`id\`) on delete set null on update cascade, constraint \`hosted_sessions_topup_id_foreign\` foreign key(\`topup_id\`) references \`topups\`(\`id\`) on delete set null on update cascade, primary key (\`id\`));`);
    this.addSql(`create index \`hosted_sessions_user_id_index\` on \`hosted_sessions\` (\`user_id\`);`);
    this.addSql(`create unique index \`hosted_sessions_token_hash_unique\` on \`hosted_sessions\` (\`token_hash\`);`);
    this.addSql(`create index \`hosted_sessions_plan_id_index\` on \`hosted_sessions\` (\`plan_id\`);`);
    this.addSql(`create index \`hosted_sessions_subscription_id_index\` on \`hosted_sessions\` (\`subscription_id\`);`);
    this.addSql(`create index \`hosted_sessions_topup_id_index\` on \`hosted_sessions\` (\`topup_id\`);`);
    this.addSql(`create index \`hosted_sessions_expires_at_index\` on \`hosted_sessions\` (\`expires_at\`);`);
  }

}
