import { Migration } from '@mikro-orm/migrations';
import { eventHash } from '../frozen/audit-chain-v1.js';

interface StoredEvent {
  id: string;
  occurred_at: string;
  actor_type: string;
  actor_id: string;
  actor_name: string;
  action: string;
  target_type: string;
  target_id: string;
  reason: string | null;
  request_id: string | null;
  changes: string;
}

export class Migration20261128022957 extends Migration {

  override async up(): Promise<void> {
    // NOTE: every statement runs through execute, in order: the backfill reads what the statements
    // before it made (addSql would run them only after up()).
    await this.execute(`alter table "audit_events" add column "chain_position" int null, add column "previous_hash" varchar(64) null, add column "hash" varchar(64) null;`);
    await this.execute(`alter table "audit_events" add constraint "audit_events_chain_position_unique" unique ("chain_position");`);

    // NOTE: hand-written: the events written before the chain are chained in the order they
    // happened (occurred_at, then id), with the service's own hash (docs/audit.md). The trigger
    // that refuses UPDATE is disabled for this and only this, inside the migration's transaction
    // (only the table's owner, the role that migrates, may do that).
    const rows = (await this.execute(
      `select id::text as id, to_char(occurred_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as occurred_at, actor_type, actor_id, actor_name, action,
              target_type, target_id, reason, request_id, changes::text as changes
         from "audit_events" order by "audit_events".occurred_at, "audit_events".id`,
    )) as StoredEvent[];
    if (rows.length === 0) return;
    await this.execute('alter table "audit_events" disable trigger "audit_events_no_update_or_delete"');
    let previousHash: string | null = null;
    let position = 0;
    for (const r of rows) {
      const hash = eventHash({
        id: r.id,
        occurredAt: new Date(r.occurred_at),
        actorType: r.actor_type,
        actorId: r.actor_id,
        actorName: r.actor_name,
        action: r.action,
        targetType: r.target_type,
        targetId: r.target_id,
        reason: r.reason,
        requestId: r.request_id,
        changes: JSON.parse(r.changes),
        previousHash,
      });
      position++;
      await this.execute('update "audit_events" set "chain_position" = ?, "previous_hash" = ?, "hash" = ? where "id" = ?', [position, previousHash, hash, r.id]);
      previousHash = hash;
    }
    await this.execute('alter table "audit_events" enable trigger "audit_events_no_update_or_delete"');
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "audit_events" drop constraint "audit_events_chain_position_unique";`);
    this.addSql(`alter table "audit_events" drop column "chain_position", drop column "previous_hash", drop column "hash";`);
  }

}
