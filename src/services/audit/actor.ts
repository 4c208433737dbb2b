import { userInfo } from 'node:os';
import type { AuditActorType } from '../../db/entities/audit-event.js';

/** Who makes a change, and the request or command line it came by (the audit trail's "who"). */
export interface Actor {
  type: AuditActorType;
  id: string;
  name: string;
  /** The API request's id, or the CLI's command line. */
  requestId: string | null;
}

/** Options whose value must never reach the audit trail. */
const SECRET_OPTIONS = /^--(password|key|secret|token)(=|$)/;

/** The command line, with the values of secret options replaced. */
export function redactedCommandLine(argv: readonly string[]): string {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const secret = SECRET_OPTIONS.exec(arg);
    if (!secret) out.push(arg);
    else if (secret[2] === '=') out.push(`${arg.slice(0, arg.indexOf('='))}=[redacted]`);
    else {
      out.push(arg, '[redacted]');
      i++;
    }
  }
  return `billing-admin ${out.join(' ')}`.trim();
}

/**
 * The service itself, for what it does on its own schedule (the in-server billing run): no
 * person acted, and the trail says so.
 */
export const systemActor: Actor = { type: 'system', id: 'billing-scheduler', name: 'system', requestId: null };

/**
 * The CLI's actor: the operating-system user who ran it (BILLING_OPERATOR may name the person
 * when several share one account, as on a bastion host).
 */
export function cliActor(argv: readonly string[] = process.argv.slice(2)): Actor {
  let osUser = 'unknown';
  try {
    osUser = userInfo().username;
  } catch {
    // No passwd entry for this uid (some containers): keep "unknown" rather than fail a command.
  }
  const name = process.env.BILLING_OPERATOR?.trim() || osUser;
  return { type: 'cli', id: osUser, name, requestId: redactedCommandLine(argv) };
}
