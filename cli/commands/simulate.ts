import type { Command } from 'commander';
import { CliFailure, EXIT, cliConfig, globalOptions, output, serverUrl } from '../runtime.js';

const ACTIONS = ['settle', 'capture', 'deny', 'cancel', 'expire', 'pending', 'refund'];
/** Actions on the whole simulator rather than one order: time passing at the gateway. */
const CLOCK_ACTIONS = ['next-day', 'tick'];

export function registerSimulateCommands(program: Command): void {
  program
    .command('simulate <action> [orderId]')
    .description(
      `tell the running server's gateway simulator to act on an order (${ACTIONS.join(', ')}), or to run ` +
        `the next day's card settlement batch (next-day) or what is due on its clock (tick); it notifies the webhook like Midtrans`,
    )
    .option('--fraud-status <status>', 'for capture: accept or challenge', 'accept')
    .option('--amount <amount>', 'for refund: a partial amount (default: everything left)')
    .action(async (action: string, orderId: string | undefined, opts, cmd: Command) => {
      if (!ACTIONS.includes(action) && !CLOCK_ACTIONS.includes(action)) {
        throw new CliFailure(`unknown action "${action}"; use one of ${[...ACTIONS, ...CLOCK_ACTIONS].join(', ')}`, EXIT.usage);
      }
      const config = cliConfig();
      if (config.gateway.baseUrl) throw new CliFailure('GATEWAY_BASE_URL is set: the simulator is not in use', EXIT.usage);
      if (CLOCK_ACTIONS.includes(action)) return clockAction(action, cmd);
      if (!orderId) throw new CliFailure(`simulate ${action} needs an order id`, EXIT.usage);
      const url = new URL(`${serverUrl(config)}/_simulator/v2/${encodeURIComponent(orderId)}/${action}`);
      if (action === 'capture') url.searchParams.set('fraud_status', opts.fraudStatus);
      let response: Response;
      try {
        response = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: action === 'refund' && opts.amount ? JSON.stringify({ amount: Number(opts.amount) }) : '{}',
        });
      } catch (err) {
        throw new CliFailure(`cannot reach the server at ${serverUrl(config)} (is it running? BILLING_URL overrides the address): ${(err as Error).message}`, EXIT.unavailable);
      }
      const body = (await response.json().catch(() => ({}))) as Record<string, unknown>;
      if (!response.ok) {
        throw new CliFailure(`simulator answered ${response.status}: ${JSON.stringify(body)}`, response.status === 404 ? EXIT.notFound : EXIT.conflict);
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
