import { cliActor } from '../src/services/audit/actor.js';
import { recordAuditEvent, type AuditEntry } from '../src/services/audit/record-audit-event.js';
import type { DataContext } from '../src/services/context.js';

/**
 * Records a change this CLI made, with the operating-system user (or BILLING_OPERATOR) and the
 * command line (secret options redacted): every change a person makes is in the audit trail.
 */
export async function auditCliChange(ctx: Pick<DataContext, 'em'>, ...entries: AuditEntry[]): Promise<void> {
  const actor = cliActor();
  for (const entry of entries) await recordAuditEvent(ctx, actor, entry);
}
