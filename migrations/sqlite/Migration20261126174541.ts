import { Migration } from '@mikro-orm/migrations';

export class Migration20261126174541 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table \`api_keys\` (\`id\` text not null, \`name\` text not null, \`scope\` text not null, \`prefix\` text not null, \`secret_hash\` text not null, \`created_by\` text not null, \`created_at\` datetime not null, \`last_used_at\` datetime null, \`revoked_at\` datetime null, primary key (\`id\`));`);
    this.addSql(`create unique index \`api_keys_secret_hash_unique\` on \`api_keys\` (\`secret_hash\`);`);

    this.addSql(`create table \`audit_events\` (\`id\` text not null, \`occurred_at\` datetime not null, \`actor_type\` text not null, \`actor_id\` text not null, \`actor_name\` text not null, \`action\` text not null, \`target_type\` text not null, \`target_id\` text not null, \`reason\` text null, \`request_id\` text null, \`changes\` json not null, primary key (\`id\`));`);
    this.addSql(`create index \`audit_events_target_id_index\` on \`audit_events\` (\`target_id\`);`);
    this.addSql(`create index \`audit_events_actor_name_index\` on \`audit_events\` (\`actor_name\`);`);
    this.addSql(`create index \`audit_events_occurred_at_index\` on \`audit_events\` (\`occurred_at\`);`);

    this.addSql(`alter table \`users\` add column \`disabled_at\` datetime null;`);

    // NOTE: hand-written: audit events are append-only.
    for (const op of ['update', 'delete']) {
      this.addSql(`create trigger \`audit_events_no_${op}\` before ${op} on \`audit_events\` begin select raise(abort, 'audit events are append-only: ${op} refused'); end;`);
    }
  }

}
