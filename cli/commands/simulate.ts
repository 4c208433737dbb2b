import type { Command } from 'commander';
import { ValidationError } from '../../src/domain/errors.js';
import { parseAmountInput } from '../../src/domain/money.js';
import { CliFailure, EXIT, cliConfig, globalOptions, output, serverUrl } from '../runtime.js';

const ACTIONS = ['settle', 'capture', 'deny', 'cancel', 'expire', 'pending', 'refund'];
const FRAUD_STATUSES = ['accept', 'challenge'];
/** Actions on the whole simulator rather than one order: time passing at the gateway. */
const CLOCK_ACTIONS = ['next-day', 'tick'];

/** The simulator's answer as an exit status: its input refusals are bad input (2), like the CLI's own. */
function exitForSimulatorStatus(status: number): number {
  if (status === 404) return EXIT.notFound;
  if (status === 400 || status === 413 || status === 422) return EXIT.usage;
  if (status >= 500) return EXIT.unavailable;
  return EXIT.conflict;
}

/** Every option is checked before the simulator is asked: a bad --amount must never become a full refund. */
function validate(action: string, orderId: string | undefined, opts: { fraudStatus?: string; amount?: string }): void {
  if (!ACTIONS.includes(action) && !CLOCK_ACTIONS.includes(action)) {
    throw new CliFailure(`unknown action "${action}"; use one of ${[...ACTIONS, ...CLOCK_ACTIONS].join(', ')}`, EXIT.usage);
  }
  if (!CLOCK_ACTIONS.includes(action) && !orderId) throw new CliFailure(`simulate ${action} needs an order id`, EXIT.usage);
  if (opts.amount !== undefined) {
    if (action !== 'refund') throw new CliFailure(`--amount applies to refund only, not ${action}`, EXIT.usage);
    // The gateway's amounts are rupiah: the one amount reader says what is wrong ("50.000" included).
    try {
      parseAmountInput(opts.amount, 'IDR', '--amount');
    } catch (err) {
      if (!(err instanceof ValidationError)) throw err;
      throw new CliFailure(`--amount ${err.errors[0]?.message ?? err.message}, got "${opts.amount}"`, EXIT.usage);
    }
  }
  if (opts.fraudStatus !== undefined) {
    if (action !== 'capture') throw new CliFailure(`--fraud-status applies to capture only, not ${action}`, EXIT.usage);
    if (!FRAUD_STATUSES.includes(opts.fraudStatus)) throw new CliFailure(`--fraud-status must be one of ${FRAUD_STATUSES.join(', ')}, got "${opts.fraudStatus}"`, EXIT.usage);
  }
}

export function registerSimulateCommands(program: Command): void {
  program
    .command('simulate <action> [orderId]')
    .description(
      `tell the running server's gateway simulator to act on an order (${ACTIONS.join(', ')}), or to run ` +
        `the next day's card settlement batch (next-day) or what is due on its clock (tick); it notifies the webhook like Midtrans`,
    )
    .option('--fraud-status <status>', 'for capture: accept (default) or challenge')
    .option('--amount <amount>', 'for refund: a partial amount (default: everything left)')
    .action(async (action: string, orderId: string | undefined, opts, cmd: Command) => {
      validate(action, orderId, opts);
      const config = cliConfig();
      if (config.gateway.baseUrl) throw new CliFailure('GATEWAY_BASE_URL is set: the simulator is not in use', EXIT.usage);
      if (CLOCK_ACTIONS.includes(action)) return clockAction(action, cmd);
      const url = new URL(`${serverUrl(config)}/_simulator/v2/${encodeURIComponent(orderId!)}/${action}`);
      if (action === 'capture') url.searchParams.set('fraud_status', opts.fraudStatus ?? 'accept');
      let response: Response;
      try {
        response = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: action === 'refund' && opts.amount !== undefined ? JSON.stringify({ amount: opts.amount.trim().replace(/\.0{1,2}$/, '') }) : '{}',
        });
      } catch (err) {
        throw new CliFailure(`cannot reach the server at ${serverUrl(config)} (is it running? BILLING_URL overrides the address): ${(err as Error).message}`, EXIT.unavailable);
      }
      const body = (await response.json().catch(() => ({}))) as Record<string, unknown>;
      if (!response.ok) {
        throw new CliFailure(`simulator answered ${response.status}: ${JSON.stringify(body)}`, exitForSimulatorStatus(response.status));
      }
      output(globalOptions(cmd), body, () => {
        const n = body.notification as { url?: string; http_status?: number | null; error?: string | null } | undefined;
        return `${orderId} is now ${String(body.transaction_status)}; notification to ${n?.url ?? '?'}: ${n?.http_status ?? n?.error ?? 'not sent'}`;
      });
    });
}

/** POST /_simulator/next-day or /tick: prints the orders that changed (each was notified). */
async function clockAction(action: string, cmd: Command): Promise<void> {
  const config = cliConfig();
  let response: Response;
  try {
    response = await fetch(`${serverUrl(config)}/_simulator/${action}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  } catch (err) {
    throw new CliFailure(`cannot reach the server at ${serverUrl(config)} (is it running? BILLING_URL overrides the address): ${(err as Error).message}`, EXIT.unavailable);
  }
  const body = (await response.json().catch(() => ({}))) as { changed?: string[] };
  if (!response.ok) throw new CliFailure(`simulator answered ${response.status}: ${JSON.stringify(body)}`, EXIT.conflict);
  output(globalOptions(cmd), body, () => {
    const changed = body.changed ?? [];
    return changed.length === 0 ? 'nothing was due' : `changed and notified: ${changed.join(', ')}`;
  });
}
