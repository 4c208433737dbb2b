import { Migration } from '@mikro-orm/migrations';

export class Migration20261126234113 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "hosted_sessions" ("id" uuid not null, "kind" varchar(10) not null, "user_id" uuid not null, "token_hash" varchar(64) not null, "plan_id" uuid null, "topup_amount" varchar(30) null, "payment_type" varchar(20) null, "success_url" varchar(2000) null, "cancel_url" varchar(2000) null, "return_url" varchar(2000) null, "expires_at" timestamptz not null, "opened_at" timestamptz null, "browser_secret_hash" varchar(64) null, "subscription_id" uuid null, "topup_id" uuid null, "created_at" timestamptz not null, constraint "hosted_sessions_pkey" primary key ("id"));`);
    this.addSql(`alter table "hosted_sessions" add constraint "hosted_sessions_token_hash_unique" unique ("token_hash");`);
    this.addSql(`create index "hosted_sessions_expires_at_index" on "hosted_sessions" ("expires_at");`);

    this.addSql(`alter table "hosted_sessions" add constraint "hosted_sessions_user_id_foreign" foreign key ("user_id") references "users" ("id") on update cascade;`);
    this.addSql(`alter table "hosted_sessions" add constraint "hosted_sessions_plan_id_foreign" foreign key ("plan_id") references "plans" ("id") on update cascade on delete set null;`);
    this.addSql(`alter table "hosted_sessions" add constraint "hosted_sessions_subscription_id_foreign" foreign key ("subscription_id") references "subscriptions" ("id") on update cascade on delete set null;`);
    this.addSql(`alter table "hosted_sessions" add constraint "hosted_sessions_topup_id_foreign" foreign key ("topup_id") references "topups" ("id") on update cascade on delete set null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "hosted_sessions" cascade;`);
  }

}
