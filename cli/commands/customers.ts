import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { serializeCustomer } from '../../src/http/customer-serializers.js';
import { cliActor } from '../../src/services/audit/actor.js';
import { createCustomer, listCustomers, updateCustomer, type CustomerFields } from '../../src/services/users/customers.js';
import { findCustomer } from '../../src/services/users/find-customer.js';
import { describeRecord } from '../lookups.js';
import { CliFailure, EXIT, globalOptions, output, table, withServices } from '../runtime.js';

/*
 * `billing-admin customers …`: the staff API's /admin/customers/ from the command line, the
 * same use cases, recorded in the audit trail with the operator as actor.
 */

interface FieldOptions {
  externalId?: string;
  email?: string;
  firstName?: string;
  lastName?: string;
  locale?: string;
  taxProfile?: string;
}

/** --tax-profile takes a JSON file (or - for standard input) shaped like PUT /tax-profile/'s body. */
function taxProfileOption(path: string | undefined): CustomerFields['taxProfile'] {
  if (path === undefined) return undefined;
  const text = readFileSync(path === '-' ? 0 : path, 'utf8');
  try {
    return JSON.parse(text);
  } catch {
    throw new CliFailure(`--tax-profile: ${path} is not JSON`, EXIT.usage);
  }
}

function fieldsOf(opts: FieldOptions): CustomerFields {
  const fields: CustomerFields = {};
  if (opts.externalId !== undefined) fields.externalId = opts.externalId === '' ? null : opts.externalId;
  if (opts.email !== undefined) fields.email = opts.email === '' ? null : opts.email;
  if (opts.firstName !== undefined) fields.firstName = opts.firstName;
  if (opts.lastName !== undefined) fields.lastName = opts.lastName;
  if (opts.locale !== undefined) fields.locale = opts.locale === '' ? null : opts.locale;
  const taxProfile = taxProfileOption(opts.taxProfile);
  if (taxProfile !== undefined) fields.taxProfile = taxProfile;
  return fields;
}

const withFieldOptions = (cmd: Command): Command =>
  cmd
    .option('--external-id <id>', "your system's id for the customer (unique)")
    .option('--email <email>', 'email address')
    .option('--first-name <name>', 'first name')
    .option('--last-name <name>', 'last name')
    .option('--locale <id|en>', 'the language the customer reads')
    .option('--tax-profile <file>', 'the buyer identity for tax invoices, as JSON (- reads standard input)')
    .requiredOption('--reason <text>', 'why; kept in the audit trail');

export function registerCustomerCommands(program: Command): void {
  const customers = program.command('customers').description("customers, as an integrator's backend makes them (named by id, username or ext:<external_id>)");

  withFieldOptions(customers.command('create').description('create a customer; without --username it is the external id; customers made here have no password'))
    .option('--username <name>', 'login name (default: the external id)')
    .action(async (opts: FieldOptions & { username?: string; reason: string }, cmd: Command) => {
      const made = await withServices((s) => createCustomer(s, cliActor(), { ...fieldsOf(opts), username: opts.username, reason: opts.reason }));
      const shown = serializeCustomer(made);
      output(globalOptions(cmd), shown, () => `Created customer ${made.username} (${made.id})${made.externalId ? `, external id ${made.externalId}` : ''}.`);
    });

  withFieldOptions(customers.command('update <customer>').description("change a customer's details; only the options given change ('' clears one)"))
    .action(async (ref: string, opts: FieldOptions & { reason: string }, cmd: Command) => {
      const fields = fieldsOf(opts);
      if (Object.keys(fields).length === 0) throw new CliFailure('give at least one field to change', EXIT.usage);
      const changed = await withServices((s) => updateCustomer(s, cliActor(), ref, { ...fields, reason: opts.reason }));
      const shown = serializeCustomer(changed);
      output(globalOptions(cmd), shown, () => describeRecord(shown));
    });

  customers
    .command('show <customer>')
    .description('show a customer (id, username or ext:<external_id>)')
    .action(async (ref: string, _opts, cmd: Command) => {
      const shown = serializeCustomer(await withServices((s) => findCustomer(s, ref)));
      output(globalOptions(cmd), shown, () => describeRecord(shown));
    });

  customers
    .command('list')
    .description('list customers, newest first')
    .option('--external-id <id>', 'only the customer with this external id')
    .option('--email <email>', 'only customers with this email')
    .option('-q, --query <text>', 'part of the username, external id, email or name')
    .option('--page <n>', 'page number', '1')
    .option('--page-size <n>', 'customers per page (at most 100)', '50')
    .action(async (opts: { externalId?: string; email?: string; query?: string; page: string; pageSize: string }, cmd: Command) => {
      const page = Number(opts.page);
      const pageSize = Number(opts.pageSize);
      if (!Number.isSafeInteger(page) || page < 1 || !Number.isSafeInteger(pageSize) || pageSize < 1 || pageSize > 100) {
        throw new CliFailure('--page must be a whole number from 1, --page-size from 1 to 100', EXIT.usage);
      }
      const found = await withServices((s) => listCustomers(s, { externalId: opts.externalId, email: opts.email, q: opts.query }, { page, pageSize }));
      const rows = found.items.map(serializeCustomer);
      output(globalOptions(cmd), { count: found.count, results: rows }, () => `${table(rows, ['id', 'username', 'external_id', 'email', 'locale', 'created_at'])}\n${found.count} customer${found.count === 1 ? '' : 's'}`);
    });
}
