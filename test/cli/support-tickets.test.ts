import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/domain/clock.js';
import { runCli, type CliResult } from '../helpers/cli.js';
import { cliEnv } from '../helpers/cli-server.js';
import { DATABASES } from '../helpers/database.js';
import { signedNotification } from '../helpers/factories.js';
import { STANDARD_PLANS, startTestServer, type HttpResult, type TestServer } from '../helpers/server.js';
import { simulate, subscribe, type TestUser } from '../helpers/subscriptions.js';

/*
 * Issue 30: docs/support.md solves five tickets with exact commands and staff API requests. This
 * suite reads the page, seeds a database on which each ticket happened (through the real API,
 * the gateway simulator and the CLI), runs every `billing-admin` line of its ```sh blocks (with
 * --json) and every request of its ```http blocks (with the read key its first command makes),
 * in the page's order, and checks what the page says each answer shows. A line added to the
 * page that this suite does not know, or a line it knows that left the page, fails it.
 */

const DOC_PATH = fileURLToPath(new URL('../../docs/support.md', import.meta.url));
const ADMIN_ROOT = '/api/subscriptions/admin/';

const TICKETS = [
  'Why was I charged twice?',
  'My invoice says paid, but I was refunded',
  'Who gave this customer credit?',
  'How much did we collect last month?',
  'A customer cannot log in',
];

interface DocCommand {
  section: string;
  kind: 'sh' | 'http';
  /** The line as written on the page, placeholders and all. */
  line: string;
  /** An http POST's JSON body, as written. */
  body?: string;
}

interface DocSection {
  title: string;
  commands: DocCommand[];
}

/** The page's `## ` sections and, in order, the commands of their ```sh and ```http blocks. */
function readDoc(text: string): DocSection[] {
  const sections: DocSection[] = [];
  const blocks = [...text.matchAll(/^```([\w-]*)\n([\s\S]*?)^```$/gm)];
  for (const block of blocks) {
    const [, lang, content] = block;
    if (lang !== 'sh' && lang !== 'http') {
      // Any other block must hold no command, or it would be one this suite never runs.
      expect(content, `a \`\`\`${lang} block holds a command`).not.toMatch(/billing-admin|\/api\/subscriptions\/admin\//);
    }
  }
  for (const part of text.split(/^## /m).slice(1)) {
    const title = part.slice(0, part.indexOf('\n')).trim();
    const commands: DocCommand[] = [];
    for (const [, lang, content] of part.matchAll(/^```([\w-]*)\n([\s\S]*?)^```$/gm)) {
      if (lang === 'sh') {
        for (const raw of content.split('\n')) {
          const line = raw.trim();
          if (!line || line.startsWith('#')) continue;
          expect(line, 'a ```sh line is one billing-admin command').toMatch(/^billing-admin /);
          commands.push({ section: title, kind: 'sh', line });
        }
      } else if (lang === 'http') {
        for (const raw of content.split('\n')) {
          const line = raw.trimEnd();
          if (/^(GET|POST) /.test(line)) {
            expect(line, 'a request is to the staff API').toMatch(new RegExp(`^(GET|POST) ${ADMIN_ROOT.replace(/\//g, '\\/')}`));
            commands.push({ section: title, kind: 'http', line });
          } else if (line.trim()) {
            const last = commands.at(-1);
            expect(last?.line, `"${line}" follows no POST`).toMatch(/^POST /);
            last!.body = `${last!.body ?? ''}${line}\n`;
          }
        }
      }
    }
    sections.push({ title, commands });
  }
  return sections;
}

/** Splits a command line as a POSIX shell would for words, single and double quotes. */
function shellWords(line: string): string[] {
  const words: string[] = [];
  const re = /"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+)/g;
  let current = '';
  let last = 0;
  for (const m of line.matchAll(re)) {
    if (m.index! > last && current) {
      words.push(current);
      current = '';
    }
    current += m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : (m[2] ?? m[3]);
    last = m.index! + m[0].length;
    if (line[last] === undefined || /\s/.test(line[last])) {
      words.push(current);
      current = '';
    }
  }
  return words;
}

/** The line with each `<placeholder>` replaced; one this ticket has no value for fails the test. */
function fill(line: string, values: Record<string, string>): string {
  return line.replace(/<([a-z_]+)>/g, (_, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`"${line}": no value for <${name}> at this point of the ticket`);
    return value;
  });
}

type Answer = { kind: 'sh'; cli: CliResult; json: any } | { kind: 'http'; res: HttpResult; json: any };

describe.each(DATABASES)('docs/support.md, run on a seeded database (%s)', { timeout: 180_000 }, (kind) => {
  const clock = new ManualClock(new Date('2026-10-06T03:00:00.000Z'));
  let server: TestServer;
  let env: Record<string, string>;
  let cwd: string;
  const users: Record<string, TestUser> = {};
  /** What the seeding knows (and a reader would copy from the customer's email or receipt). */
  const seeded: Record<string, any> = {};
  let key = '';
  const ran: DocCommand[] = [];
  const sections = readDoc(readFileSync(DOC_PATH, 'utf8'));

  async function run(command: DocCommand, values: Record<string, string>): Promise<Answer> {
    ran.push(command);
    const line = fill(command.line, values);
    if (command.kind === 'sh') {
      const [, ...args] = shellWords(line);
      const cli = await runCli(['--json', ...args], { ...env, BILLING_OPERATOR: 'support-engineer' }, undefined, { cwd });
      expect(cli.code, `${line}\n${cli.stderr}`).toBe(0);
      expect(cli.json, `${line}: --json prints JSON`).toBeDefined();
      return { kind: 'sh', cli, json: cli.json };
    }
    const [method, path] = line.split(' ');
    const res = await server.request(method, path, {
      headers: { authorization: `Bearer ${key}` },
      body: command.body ? JSON.parse(fill(command.body, values)) : undefined,
    });
    expect(res.status, `${line}: ${res.text}`).toBe(200);
    return { kind: 'http', res, json: res.body };
  }

  /** Runs a section's commands in order; `check` gets each answer and may add placeholder values for the lines after it. */
  async function runSection(title: string, checks: Record<string, (answer: any, values: Record<string, string>) => void | Promise<void>>, values: Record<string, string> = {}) {
    const section = sections.find((s) => s.title === title || s.title.replace(/^\d+\. /, '').replace(/^"|"$/g, '') === title);
    expect(section, `a section "${title}"`).toBeDefined();
    expect(section!.commands.map((c) => c.line)).toEqual(Object.keys(checks));
    for (const command of section!.commands) {
      const answer = await run(command, values);
      if (process.env.SUPPORT_DOC_DUMP) process.stderr.write(`\n### ${command.line}\n${JSON.stringify(answer.json, null, 1)}\n`);
      await checks[command.line](answer.json, values);
    }
  }

  beforeAll(async () => {
    server = await startTestServer(kind, { clock });
    await server.seedPlans(STANDARD_PLANS);
    env = cliEnv(server);
    cwd = mkdtempSync(join(tmpdir(), 'support-doc-'));
    for (const name of ['alice', 'bob', 'carol', 'dave']) users[name] = await server.createUser({ username: name });
    const sari = await server.createUser({ username: 'sari', isStaff: true });
    const at = (iso: string) => clock.set(new Date(iso));

    // 1. alice pays her first invoice's virtual account; the gateway's notification of it is late,
    // so she pays the same invoice again with GoPay. The service asks the gateway before it makes
    // a second charge, but the gateway cannot be reached for the cancel nor for the status (a
    // 500 on both), so the second order is made; the first one's notification arrives the next day.
    const first = await subscribe(server, users.alice, { plan_id: 'basic-monthly', payment_type: 'bank_transfer' });
    expect(first.status, first.text).toBe(201);
    const paidAtBank = await server.request('POST', `/_simulator/v2/${first.body.payment.order_id}/settle?notify=false`, { body: {} });
    expect(paidAtBank.status, paidAtBank.text).toBe(200);
    at('2026-10-06T04:00:00.000Z');
    const unreachable = await server.request('POST', '/_simulator/faults', { body: { mode: 'http_500', operations: ['cancel', 'status'] } });
    expect(unreachable.status, unreachable.text).toBe(200);
    const again = await server.api('POST', '/payments/charge/', { auth: users.alice, body: { subscription_id: first.body.subscription.id, payment_type: 'gopay' } });
    expect(again.status, again.text).toBe(201);
    expect((await server.request('POST', '/_simulator/faults', { body: { mode: 'none' } })).status).toBe(200);
    await simulate(server, again.body.payment.order_id, 'settle');
    at('2026-10-07T02:00:00.000Z');
    const atBank = server.running.billing.simulator!.transaction(first.body.payment.order_id)!;
    expect(atBank.transaction_status).toBe('settlement');
    const late = await server.api('POST', '/webhook/notification/', {
      body: signedNotification(server.config.gateway.serverKey, {
        order_id: atBank.order_id,
        transaction_id: atBank.transaction_id,
        transaction_status: 'settlement',
        gross_amount: '50000.00',
        settlement_time: '2026-10-06 10:00:00',
      }),
    });
    expect(late.status, late.text).toBe(200);
    seeded.alice = { duplicate: first.body.payment, paying: again.body.payment, invoice: (await server.api('GET', `/invoices/${first.body.payment.invoice_id}/`, { auth: users.alice })).body };

    // 2. bob pays Pro with GoPay; sari refunds it in full a week later.
    at('2026-10-12T03:00:00.000Z');
    const bobs = await subscribe(server, users.bob, { plan_id: 'pro-monthly', payment_type: 'gopay' });
    expect(bobs.status, bobs.text).toBe(201);
    await simulate(server, bobs.body.payment.order_id, 'settle');
    at('2026-10-20T03:00:00.000Z');
    const refunded = await server.api('POST', `/admin/payments/${bobs.body.payment.id}/refund/`, {
      auth: sari,
      body: { reason: 'Ticket 1187: asked to cancel within 14 days', description: 'Refund of your October subscription' },
    });
    expect(refunded.status, refunded.text).toBe(200);
    seeded.bob = { payment: bobs.body.payment };

    // 3. carol pays Basic by QRIS; sari credits her wallet after an outage.
    at('2026-10-25T03:00:00.000Z');
    const carols = await subscribe(server, users.carol, { plan_id: 'basic-monthly', payment_type: 'qris' });
    expect(carols.status, carols.text).toBe(201);
    await simulate(server, carols.body.payment.order_id, 'settle');
    const credit = await server.api('POST', '/admin/wallets/carol/adjust/', {
      auth: sari,
      body: { amount: '25000', reason: 'Ticket 1203: two days of outage', description: 'Credit for the October outage' },
    });
    expect(credit.status, credit.text).toBe(200);

    // 5. dave pays in November (outside October's report); an operator disables his account.
    at('2026-11-02T03:00:00.000Z');
    const daves = await subscribe(server, users.dave, { plan_id: 'basic-monthly', payment_type: 'bank_transfer' });
    await simulate(server, daves.body.payment.order_id, 'settle');
    const disabled = await runCli(['users', 'disable', 'dave', '--reason', 'Ticket 1190: chargeback pattern, checking'], { ...env, BILLING_OPERATOR: 'ops-oncall' });
    expect(disabled.code, disabled.stderr).toBe(0);
    expect((await server.api('POST', '/auth/login/', { body: { username: 'dave', password: users.dave.password } })).status).not.toBe(200);
    at('2026-11-03T03:00:00.000Z');
  }, 180_000);

  afterAll(async () => {
    await server?.stop();
    if (cwd) rmSync(cwd, { recursive: true, force: true });
  });

  it('the page has the five tickets, each with its commands, and its requests where the staff API answers it', () => {
    const tickets = sections.filter((s) => /^\d+\. /.test(s.title));
    expect(tickets.map((s) => s.title)).toEqual(TICKETS.map((t, i) => `${i + 1}. "${t}"`));
    for (const ticket of tickets) {
      expect(ticket.commands.some((c) => c.kind === 'sh'), ticket.title).toBe(true);
    }
    for (const ticket of tickets.slice(0, 4)) expect(ticket.commands.some((c) => c.kind === 'http'), ticket.title).toBe(true);
  });

  it('before you start: a read key, made by the CLI, printed once', async () => {
    await runSection('Before you start', {
      'billing-admin api-keys create --name support-desk --scope read --reason "Support desk: read-only look-ups"': (json) => {
        expect(json).toMatchObject({ name: 'support-desk', scope: 'read', key: expect.stringMatching(/^bsk_/) });
        key = json.key;
      },
    });
  });

  it('1. why was I charged twice: two settled payments of one invoice, the later one credited to the wallet with a credit note', async () => {
    const { duplicate, paying, invoice } = seeded.alice;
    const twoPayments = (results: any[]) => {
      expect(results).toHaveLength(2);
      expect(results.every((p) => p.status === 'settled' && p.invoice_id === invoice.id && p.gross_amount === '50000.00' && p.user.username === 'alice')).toBe(true);
      const credited = results.find((p) => p.credited_amount === p.gross_amount);
      const paid = results.find((p) => p.credited_amount === '0.00');
      expect(credited).toMatchObject({ id: duplicate.id, order_id: duplicate.order_id, payment_type: 'bank_transfer' });
      expect(paid).toMatchObject({ id: paying.id, payment_type: 'gopay' });
      return credited;
    };
    const creditNoteOf = (json: any) => {
      expect(json).toMatchObject({ id: invoice.id, number: invoice.number, status: 'paid', user: { username: 'alice' } });
      expect(json.credit_notes).toEqual([expect.objectContaining({ reason: 'unusable_settlement', amount: '50000.00' })]);
    };
    const gatewaySettled = (json: any) => {
      expect(json).toMatchObject({ id: duplicate.id, status: 'settled', credited_amount: '50000.00' });
      expect(json.gateway).toMatchObject({ local_status: 'settled', gateway_status: { transaction_status: 'settlement' } });
    };
    const creditEntry = (entries: any[]) => {
      expect(entries).toEqual([
        expect.objectContaining({
          kind: 'credit',
          amount: '50000.00',
          source: 'refund',
          description: `Payment ${duplicate.order_id} could not be used (invoice_already_paid): credited to the wallet`,
        }),
      ]);
    };
    await runSection(
      TICKETS[0],
      {
        'billing-admin payments list --user alice': (json, values) => {
          const credited = twoPayments(json);
          Object.assign(values, { order_id: credited.order_id, payment_id: credited.id, invoice_id: credited.invoice_id });
        },
        'billing-admin invoices show <invoice_number>': creditNoteOf,
        'billing-admin payments show <order_id> --gateway': gatewaySettled,
        'billing-admin wallet transactions alice': creditEntry,
        'GET /api/subscriptions/admin/payments/?user=alice': (json) => {
          expect(json.count).toBe(2);
          twoPayments(json.results);
        },
        'GET /api/subscriptions/admin/invoices/<invoice_id>/': creditNoteOf,
        'GET /api/subscriptions/admin/payments/<payment_id>/?gateway=true': gatewaySettled,
        'GET /api/subscriptions/admin/wallets/alice/': (json) => {
          expect(json.wallet.balance).toBe('50000.00');
          creditEntry(json.transactions.results);
        },
      },
      // The customer's email or receipt names the invoice.
      { invoice_number: invoice.number },
    );
    // What the page says of a refund: nothing of the duplicate is left to refund.
    const refund = await runCli(['payments', 'refund', duplicate.order_id, '--reason', 'duplicate'], env);
    expect(refund.code, refund.stderr).not.toBe(0);
    expect(refund.stderr).toMatch(/Nothing of this payment is left to refund/);
  });

  it('2. my invoice says paid but I was refunded: the invoice stays paid, the refund is a credit note against it, the audit trail says who and why', async () => {
    const { payment } = seeded.bob;
    let invoiceId = '';
    const paidAndRefunded = (invoices: any[], values: Record<string, string>) => {
      expect(invoices).toHaveLength(1);
      const [invoice] = invoices;
      expect(invoice).toMatchObject({ status: 'paid', total_amount: '150000.00', amount_refunded: '150000.00', paid_at: expect.any(String), user: { username: 'bob' } });
      invoiceId = invoice.id;
      Object.assign(values, { invoice_number: invoice.number, invoice_id: invoice.id });
    };
    const withRefundNote = (json: any, values: Record<string, string>) => {
      expect(json).toMatchObject({ id: invoiceId, status: 'paid', amount_refunded: '150000.00' });
      expect(json.credit_notes).toEqual([expect.objectContaining({ reason: 'refund', amount: '150000.00', number: expect.stringMatching(/^CN-2026-\d{6}$/) })]);
      values.credit_note_number = json.credit_notes[0].number;
    };
    const refundEvent = (events: any[]) => {
      expect(events).toEqual([
        expect.objectContaining({
          actor: { type: 'staff', id: expect.any(String), name: 'sari' },
          action: 'payment.refund',
          target: { type: 'payment', id: payment.id },
          reason: 'Ticket 1187: asked to cancel within 14 days',
          changes: expect.objectContaining({ status: ['settled', 'refunded'] }),
        }),
      ]);
    };
    await runSection(TICKETS[1], {
      'billing-admin invoices list --user bob': paidAndRefunded,
      'billing-admin invoices show <invoice_number>': withRefundNote,
      'billing-admin payments list --user bob': (json, values) => {
        const paying = json.find((p: any) => p.invoice_id === invoiceId);
        expect(paying).toMatchObject({ id: payment.id, status: 'refunded', payment_type: 'gopay', refunded_amount: '150000.00' });
        Object.assign(values, { order_id: paying.order_id, payment_id: paying.id });
      },
      'billing-admin payments show <order_id>': (json) => {
        expect(json).toMatchObject({ id: payment.id, status: 'refunded', gross_amount: '150000.00', refunded_amount: '150000.00' });
        expect(json.refunds).toEqual([expect.objectContaining({ amount: '150000.00', status: 'succeeded', destination: 'gateway' })]);
      },
      'billing-admin audit list --target <payment_id>': refundEvent,
      'billing-admin credit-notes pdf <credit_note_number>': (json, values) => {
        expect(json).toMatchObject({ number: values.credit_note_number, file: `${values.credit_note_number}.pdf` });
        expect(readFileSync(join(cwd, json.file)).subarray(0, 5).toString()).toBe('%PDF-');
      },
      'GET /api/subscriptions/admin/invoices/?user=bob': (json, values) => paidAndRefunded(json.results, values),
      'GET /api/subscriptions/admin/invoices/<invoice_id>/': withRefundNote,
      'GET /api/subscriptions/admin/refunds/?user=bob': (json) => {
        expect(json.results).toEqual([
          expect.objectContaining({ payment_id: payment.id, amount: '150000.00', status: 'succeeded', destination: 'gateway', description: 'Refund of your October subscription' }),
        ]);
      },
      'GET /api/subscriptions/admin/audit-events/?target=<payment_id>': (json) => refundEvent(json.results),
    });
  });

  it('3. who gave this customer credit: the ledger says what the customer was told, the audit trail who gave it and why', async () => {
    const adjustment = (entries: any[]) => {
      expect(entries).toContainEqual(expect.objectContaining({ kind: 'credit', amount: '25000.00', source: 'adjustment', description: 'Credit for the October outage' }));
      expect(JSON.stringify(entries)).not.toContain('Ticket 1203');
    };
    const byWhom = (events: any[], walletId: string) => {
      expect(events).toEqual([
        expect.objectContaining({
          actor: { type: 'staff', id: expect.any(String), name: 'sari' },
          action: 'wallet.adjust',
          target: { type: 'wallet', id: walletId },
          reason: 'Ticket 1203: two days of outage',
          occurred_at: expect.any(String),
          changes: { balance: ['0.00', '25000.00'] },
        }),
      ]);
    };
    const everythingSariDid = (events: any[]) => expect(events.map((e) => e.action)).toEqual(['wallet.adjust', 'subscription.cancel', 'payment.refund']); // the cancellation her refund implied has its own event
    await runSection(TICKETS[2], {
      'billing-admin wallet transactions carol': adjustment,
      'billing-admin wallet show carol': (json, values) => {
        expect(json).toMatchObject({ balance: '25000.00', currency: 'IDR' });
        values.wallet_id = json.id;
      },
      'billing-admin audit list --target <wallet_id>': (json, values) => byWhom(json, values.wallet_id),
      'billing-admin audit list --actor sari': everythingSariDid,
      'GET /api/subscriptions/admin/wallets/carol/': (json) => {
        expect(json.wallet.balance).toBe('25000.00');
        adjustment(json.transactions.results);
      },
      'GET /api/subscriptions/admin/audit-events/?target=<wallet_id>': (json, values) => byWhom(json.results, values.wallet_id),
      'GET /api/subscriptions/admin/audit-events/?actor=sari': (json) => everythingSariDid(json.results),
    });
  });

  it('4. how much did we collect last month: the revenue report of October, to the rupiah', async () => {
    const october = (json: any) => {
      expect(json.rows).toEqual([
        {
          month: '2026-10',
          collected: '300000.00',
          refunded: '150000.00',
          charged_back: '0.00',
          net: '150000.00',
          by_method: [
            { payment_type: 'bank_transfer', collected: '50000.00', refunded: '0.00', charged_back: '0.00', net: '50000.00' },
            { payment_type: 'gopay', collected: '200000.00', refunded: '150000.00', charged_back: '0.00', net: '50000.00' },
            { payment_type: 'qris', collected: '50000.00', refunded: '0.00', charged_back: '0.00', net: '50000.00' },
          ],
        },
      ]);
    };
    await runSection(TICKETS[3], {
      'billing-admin reports revenue --from 2026-10 --to 2026-10': october,
      'GET /api/subscriptions/admin/reports/revenue/?from=2026-10&to=2026-10': october,
    });
  });

  it('5. a customer cannot log in: the account shows disabled; enabled, the customer logs in', async () => {
    const login = () => server.api('POST', '/auth/login/', { body: { username: 'dave', password: users.dave.password } });
    expect((await login()).status).not.toBe(200);
    await runSection(TICKETS[4], {
      'billing-admin users show dave': (json, values) => {
        expect(json).toMatchObject({ username: 'dave', disabled_at: expect.any(String) });
        values.user_id = json.id;
      },
      'billing-admin audit list --target <user_id>': (json) => {
        expect(json).toEqual([
          expect.objectContaining({ action: 'user.disable', actor: expect.objectContaining({ type: 'cli', name: 'ops-oncall' }), reason: 'Ticket 1190: chargeback pattern, checking' }),
        ]);
      },
      'billing-admin users enable dave --reason "Ticket 1207: disabled by mistake"': (json) => {
        expect(json).toMatchObject({ changed: true, user: { username: 'dave', disabled_at: null } });
      },
    });
    const res = await login();
    expect(res.status, res.text).toBe(200);
  });

  it('every command and request on the page was run, once', () => {
    const all = sections.flatMap((s) => s.commands);
    expect(all.length).toBe(31);
    expect(ran).toEqual(all);
  });
});
