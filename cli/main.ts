import { Command } from 'commander';
import { registerApiKeyCommands } from './commands/api-keys.js';
import { registerAuditCommands } from './commands/audit.js';
import { registerBillingCommands } from './commands/billing.js';
import { registerCreditNoteCommands } from './commands/credit-notes.js';
import { registerDbCommands } from './commands/db.js';
import { registerInvoiceCommands } from './commands/invoices.js';
import { registerNotificationCommands } from './commands/notifications.js';
import { registerPaymentCommands } from './commands/payments.js';
import { registerPlanCommands } from './commands/plans.js';
import { registerReportCommands } from './commands/reports.js';
import { registerSimulateCommands } from './commands/simulate.js';
import { registerSubscriptionCommands } from './commands/subscriptions.js';
import { registerTaxCommands } from './commands/tax.js';
import { registerUserCommands } from './commands/users.js';
import { registerCustomerCommands } from './commands/customers.js';
import { registerCouponCommands } from './commands/coupons.js';
import { registerPromotionCodeCommands } from './commands/promotion-codes.js';
import { registerMetricCommands } from './commands/metrics.js';
import { registerWebhookCommands } from './commands/webhooks.js';
import { registerWalletCommands } from './commands/wallet.js';
import { VERSION } from '../src/version.js';
import { exitCodeFor, failureJson, jsonPrinted } from './runtime.js';

const program = new Command('billing-admin')
  .description('Operator commands for the billing service (same configuration as the server).')
  .version(VERSION, '-V, --version', "print this build's version")
  .option('--json', 'print one JSON document on stdout (human output and progress go to stderr); a failure too, as {"error": {"code", "message"}}')
  .showHelpAfterError()
  .exitOverride();

registerDbCommands(program);
registerUserCommands(program);
registerCustomerCommands(program);
registerCouponCommands(program);
registerPromotionCodeCommands(program);
registerMetricCommands(program);
registerPlanCommands(program);
registerSimulateCommands(program);
registerBillingCommands(program);
registerNotificationCommands(program);
registerWebhookCommands(program);
registerPaymentCommands(program);
registerWalletCommands(program);
registerCreditNoteCommands(program);
registerSubscriptionCommands(program);
registerInvoiceCommands(program);
registerTaxCommands(program);
registerReportCommands(program);
registerApiKeyCommands(program);
registerAuditCommands(program);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  const e = err as { code?: string; exitCode?: number };
  if (typeof e.code === 'string' && e.code.startsWith('commander.')) {
    const shown = e.code === 'commander.helpDisplayed' || e.code === 'commander.version' || e.code === 'commander.help';
    if (!shown && process.argv.includes('--json')) {
      process.stdout.write(`${JSON.stringify({ error: { code: 'usage_error', message: (err as Error).message.replace(/^error: /, '') } }, null, 2)}\n`);
    }
    process.exit(shown ? 0 : 2);
  }
  const { code, message } = exitCodeFor(err);
  // With --json a failure is one JSON document on stdout too, so a script reads every outcome the same way;
  // a command that printed its report and then failed (a check that found problems) prints no second one.
  if (program.opts().json && !jsonPrinted) process.stdout.write(`${JSON.stringify(failureJson(err, message), null, 2)}\n`);
  process.stderr.write(`error: ${message}\n`);
  process.exit(code);
}
