import { Migration } from '@mikro-orm/migrations';
import { eventHash } from '../frozen/audit-chain-v1.js';

interface StoredEvent {
  id: string;
  occurred_at: number | string;
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

/** A datetime as this database stores it (milliseconds since the epoch; an ISO text by hand). */
function storedDate(value: number | string): Date {
  return typeof value === 'number' || /^\d+$/.test(value) ? new Date(Number(value)) : new Date(value);
}

export class Migration20261128022956 extends Migration {

  override async up(): Promise<void> {
    // NOTE: every statement runs through execute, in order: the backfill reads what the statements
    // before it made (addSql would run them only after up()).
    await this.execute(`alter table \`audit_events\` add column \`chain_position\` integer null;`);
    await this.execute(`alter table \`audit_events\` add column \`previous_hash\` text null;`);
    await this.execute(`alter table \`audit_events\` add column \`hash\` text null;`);
    await this.execute(`create unique index \`audit_events_chain_position_unique\` on \`audit_events\` (\`chain_position\`);`);

    // NOTE: hand-written: the events written before the chain are chained in the order they
    // happened (occurred_at, then id), with the service's own hash (docs/audit.md). The trigger
    // that refuses UPDATE is lifted for this and only this, inside the migration's transaction.
    const rows = (await this.execute(
      'select id, occurred_at, actor_type, actor_id, actor_name, action, target_type, target_id, reason, request_id, changes from audit_events order by occurred_at, id',
    )) as StoredEvent[];
    if (rows.length > 0) {
      await this.execute('drop trigger `audit_events_no_update`');
      let previousHash: string | null = null;
      let position = 0;
      for (const r of rows) {
        const hash = eventHash({
          id: r.id,
          occurredAt: storedDate(r.occurred_at),
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
        await this.execute('update `audit_events` set `chain_position` = ?, `previous_hash` = ?, `hash` = ? where `id` = ?', [position, previousHash, hash, r.id]);
        previousHash = hash;
      }
      await this.execute("create trigger `audit_events_no_update` before update on `audit_events` begin select raise(abort, 'audit events are append-only: update refused'); end;");
    }

    // NOTE: hand-written: INSERT OR REPLACE (and REPLACE INTO) would delete the event it replaces
    // without firing the DELETE trigger (SQLite fires it only with recursive_triggers on), and an
    // upsert's DO UPDATE is an update: an insert that meets an existing id or chain position is
    // refused before any of that can happen.
    await this.execute(
      "create trigger `audit_events_no_overwrite` before insert on `audit_events` when exists (select 1 from `audit_events` where `id` = new.`id` or `chain_position` = new.`chain_position`) begin select raise(abort, 'audit events are append-only: an insert over an existing event refused'); end;",
    );
  }

}
