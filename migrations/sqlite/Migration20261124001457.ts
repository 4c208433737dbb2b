import { Migration } from '@mikro-orm/migrations';

export class Migration20261124001457 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table \`access_versions\` (\`user_id\` text not null, \`version\` bigint not null, primary key (\`user_id\`));`);
    // NOTE: hand-written, not derived from the entities (the snapshot does not see triggers).
    // Every write that can change a user's access raises their access version, whoever makes it
    // (use cases, the gateway-event pipeline, set-based billing SQL, the CLI): per-process caches
    // of sessions, users and access answers are valid only while it reads the same
    // (src/http/auth/access-cache.ts). A missing row reads as version 0.
    const bump = (userId: string, guard = '') =>
      `insert into \`access_versions\` (\`user_id\`, \`version\`) select ${userId}, 1 where ${userId} is not null${guard} on conflict (\`user_id\`) do update set \`version\` = \`version\` + 1;`;
    for (const op of ['insert', 'update', 'delete']) {
      const row = op === 'delete' ? 'old' : 'new';
      this.addSql(`create trigger \`access_versions_subscriptions_${op}\` after ${op} on \`subscriptions\` begin ${bump(`${row}.\`user_id\``)} end;`);
    }
    for (const op of ['update', 'delete']) {
      this.addSql(`create trigger \`access_versions_users_${op}\` after ${op} on \`users\` begin ${bump('old.`id`')} end;`);
      // A session ending (logout, expiry purge, regeneration) or changing revokes what was cached for it.
      const userId = `(case when json_valid(old.\`data\`) then json_extract(old.\`data\`, '$.userId') end)`;
      this.addSql(`create trigger \`access_versions_sessions_${op}\` after ${op} on \`sessions\` begin ${bump(userId)} end;`);
    }
  }

}
