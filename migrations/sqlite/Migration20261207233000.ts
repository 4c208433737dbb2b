import { Migration } from '@mikro-orm/migrations';

/** The columns an event's placement leaves as they were (all of them but chain_position). */
const KEPT = ['id', 'occurred_at', 'actor_type', 'actor_id', 'actor_name', 'action', 'target_type', 'target_id', 'reason', 'request_id', 'changes', 'previous_hash', 'hash'];

/** The next free place at the head of the chain. */
const NEXT_POSITION = '(select coalesce(max(`chain_position`), 0) + 1 from `audit_events`)';

/**
 * NOTE: hand-written (the snapshot does not see triggers). The database places every inserted
 * audit event in the hash chain itself (docs/audit.md, 'Events the service did not append'): a
 * row that comes without a chain_position (written by the previous release during a rolling
 * upgrade, or by hand) gets the next position. SQLite has no hash function a trigger could call,
 * so such a row keeps no hash of its own: `audit verify` and the service's next append take its
 * hash from its content and the event before it, and the event after it names that hash, so an
 * edit or a deletion afterwards is still found. Rows that come with a position (the service's own
 * appends) are stored as sent. A migration never imports the service's code.
 */
export class Migration20261207233000 extends Migration {

  override async up(): Promise<void> {
    // NOTE: every statement runs through execute, in order: the placement reads what it placed before.
    await this.execute('drop trigger `audit_events_no_update`');
    // Events an earlier rolling upgrade left outside the chain: placed now, in the order they happened.
    const left = (await this.execute('select `id` from `audit_events` where `chain_position` is null order by `occurred_at`, `id`')) as { id: string }[];
    for (const { id } of left) await this.execute(`update \`audit_events\` set \`chain_position\` = ${NEXT_POSITION} where \`id\` = ?`, [id]);

    // An update is refused unless it is that placement: a row without a place gets the next one, nothing else changes.
    const unchanged = KEPT.map((c) => `new.\`${c}\` is old.\`${c}\``).join(' and ');
    await this.execute(
      `create trigger \`audit_events_no_update\` before update on \`audit_events\` when not (old.\`chain_position\` is null and new.\`chain_position\` = ${NEXT_POSITION} and ${unchanged}) begin select raise(abort, 'audit events are append-only: update refused'); end;`,
    );
    await this.execute(
      `create trigger \`audit_events_place_in_chain\` after insert on \`audit_events\` when new.\`chain_position\` is null begin update \`audit_events\` set \`chain_position\` = ${NEXT_POSITION} where \`id\` = new.\`id\`; end;`,
    );
  }

}
