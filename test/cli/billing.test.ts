import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Subscription } from '../../src/db/entities/subscription.js';
import { runCli } from '../helpers/cli.js';
import { DATABASES } from '../helpers/database.js';
import { iso, planBySlug, startBilling, type BillingHarness } from '../helpers/billing.js';

describe.each(DATABASES)('billing-admin billing run (%s)', (kind) => {
  let h: BillingHarness;
  let env: Record<string, string>;
  beforeAll(async () => {
    h = await startBilling(kind);
    env = { DATABASE_URL: h.server.db.url, BILLING_URL: h.server.url };
  });
  afterAll(async () => {
    await h.stop();
  });

  const billing = (...args: string[]) => runCli(['billing', 'run', ...args], env);

  it('refuses an unreadable --at, an impossible date, a time without a zone and a bad --limit (exit 2, nothing written)', async () => {
    for (const bad of ['tomorrow', '2027-02-30', '2027-03-01T09:00:00', '01/03/2027']) {
      const res = await billing('--at', bad);
      expect(res.code, bad).toBe(2);
      expect(res.stderr).toContain('is not a readable time');
    }
    const limit = await billing('--limit', '0');
    expect(limit.code).toBe(2);
    expect(limit.stderr).toContain('--limit must be a positive whole number');
  });

  it('refuses a time in the past unless --allow-past', async () => {
    const res = await billing('--at', '2020-01-01', '--json');
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('is in the past');
    expect(res.json).toEqual({ error: { code: 'usage_error', message: expect.stringContaining('is in the past') } });
    const allowed = await billing('--at', '2020-01-01', '--allow-past', '--json');
    expect(allowed.code).toBe(0);
    expect(allowed.json).toMatchObject({ at: '2020-01-01T00:00:00.000Z', subscriptions: 0 });
  });

  it('refuses a time in the future unless --force; a dry run may preview it (issue 30)', async () => {
    const future = new Date(Date.now() + 3 * 24 * 60 * 60 * 1000).toISOString();
    const res = await billing('--at', future, '--json');
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('is in the future');
    expect(res.json).toEqual({ error: { code: 'usage_error', message: expect.stringContaining('is in the future') } });
    const preview = await billing('--at', future, '--dry-run', '--json');
    expect(preview.code, preview.stderr).toBe(0);
    expect(preview.json).toMatchObject({ dry_run: true });
    const soon = await billing('--at', new Date(Date.now() + 60_000).toISOString(), '--dry-run', '--json');
    expect(soon.code).toBe(0);
  });

  it('dry run, then a real run: --json summary, wallet charged, bank transfer waiting, human table', async () => {
    const walletUser = await h.user();
    await h.fund(walletUser, '100000');
    const walletSub = await h.subscribe(walletUser, 'basic-monthly', 'wallet');
    const bankUser = await h.user();
    const bankSub = await h.subscribe(bankUser, 'pro-monthly', 'bank_transfer');
    await h.server.running.billing.simulator!.act((await h.payments(bankSub.id))[0].orderId, 'settle');

    const dry = await billing('--at', '2027-02-28T17:00:00+07:00', '--dry-run', '--json', '--allow-past');
    expect(dry.code).toBe(0);
    // The wallet's charge is predicted; the bank transfer's answer is the gateway's (issue 30).
    expect(dry.json).toMatchObject({ at: '2027-02-28T10:00:00.000Z', dry_run: true, subscriptions: 2, renewed: 2, charged: 1, pending: 0, gateway_charges: 1 });
    expect(await h.invoices(walletSub.id)).toHaveLength(1);

    const res = await billing('--at', '2027-02-28T10:00:00Z', '--json', '--allow-past', '--force');
    expect(res.code, res.stderr).toBe(0);
    expect(res.json).toMatchObject({ dry_run: false, subscriptions: 2, renewed: 2, charged: 1, pending: 1, failed: 0, past_due: 0, errors: [] });
    expect(res.json.actions.map((a: { subscription_id: string }) => a.subscription_id).sort()).toEqual([walletSub.id, bankSub.id].sort());
    expect(iso((await h.sub(walletSub.id)).currentPeriodEnd)).toBe('2027-03-31T10:00:00.000Z');
    expect((await h.payments(bankSub.id))[1]).toMatchObject({ status: 'pending' });

    const again = await billing('--at', '2027-02-28T10:00:00Z', '--allow-past', '--force');
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/renewed\s+0/);
    expect(again.stdout).toMatch(/errors\s+0/);
  });

  it("exits 0 when a customer's card is declined or there is no saved card, and says which renewals failed and why (issue 37)", async () => {
    const em = h.server.running.billing.orm.em.fork();
    const declined = await h.subscribe(await h.user(), 'pro-monthly', 'credit_card', 'sim-card-accept-4811');
    await em.nativeUpdate(Subscription, { id: declined.id }, { cardToken: 'sim-card-deny-saved' });
    const unsaved = await h.subscribe(await h.user(), 'pro-monthly', 'credit_card', 'sim-card-accept-4811');
    await em.nativeUpdate(Subscription, { id: unsaved.id }, { cardToken: null });

    // The same run as text: the failures are named under their own heading, with their reasons.
    const dry = await billing('--at', '2027-02-28T10:00:00Z', '--allow-past', '--dry-run');
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain(`${unsaved.id}`);
    expect(dry.stdout).toMatch(/Renewals failed \(1: 1 payment_method_required\)/);

    const res = await billing('--at', '2027-02-28T10:00:00Z', '--allow-past', '--json', '--force');
    expect(res.code, res.stderr).toBe(0);
    expect(res.json, JSON.stringify(res.json.actions)).toMatchObject({ renewed: 2, failed: 2, errors: [] });
    const rows = Object.fromEntries(res.json.actions.map((a: { subscription_id: string }) => [a.subscription_id, a]));
    expect(rows[declined.id]).toMatchObject({ payment_status: 'failed', status: 'past_due' });
    expect(rows[unsaved.id].error).toContain('payment_method_required');
    const failures = Object.fromEntries(res.json.renewal_failures.map((f: { subscription_id: string }) => [f.subscription_id, f]));
    expect(res.json.renewal_failures).toHaveLength(2);
    expect(failures[declined.id]).toMatchObject({ code: 'card_declined', invoice_number: expect.stringMatching(/^INV-/) });
    expect(failures[declined.id].message).toContain('Do not honor');
    expect(failures[unsaved.id]).toMatchObject({ code: 'payment_method_required', message: expect.stringContaining('No saved card') });
    // Kept on the subscriptions, for staff and the customer alike.
    const shown = await runCli(['subscriptions', 'show', unsaved.id, '--json'], env);
    expect(shown.code, shown.stderr).toBe(0);
    expect(JSON.stringify(shown.json)).toContain('payment_method_required');
  });

  it('a run at a future --at never breaks wallet verify: the ledger keeps the order it was written in, not its timestamps (issue 30)', async () => {
    const user = await h.user();
    await h.fund(user, '200000');
    const sub = await h.subscribe(user, 'basic-monthly', 'wallet');
    // Renewed a month ahead of the entries written after it, by an operator now.
    const res = await billing('--at', '2027-02-28T10:00:00Z', '--json', '--force');
    expect(res.code, res.stderr).toBe(0);
    expect((await h.payments(sub.id)).length).toBe(2);
    const adjusted = await runCli(['wallet', 'adjust', user.username, '5000', '--reason', 'goodwill', '--json'], env);
    expect(adjusted.code, adjusted.stderr).toBe(0);
    const verify = await runCli(['wallet', 'verify', '--json'], env);
    expect(verify.code, verify.stdout).toBe(0);
    expect(verify.json).toMatchObject({ ok: true, discrepancies: [] });
    expect(await h.balance(user)).toBe('105000.00');
  });

  it('exits 1 and names the subscription when one cannot be billed, after billing the others', async () => {
    const user = await h.user();
    await h.fund(user, '100000');
    const sub = await h.subscribe(user, 'basic-monthly', 'wallet');
    const usd = await planBySlug(h, 'usd-monthly');
    await h.server.running.billing.orm.em.fork().nativeUpdate(Subscription, { id: sub.id }, { pendingPlan: usd.id });
    const res = await billing('--at', '2027-02-28T10:00:00Z', '--allow-past', '--force');
    expect(res.code).toBe(1);
    expect(res.stdout).toContain(`${sub.id}: the scheduled plan usd-monthly is priced in USD`);
  });
});
