import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Subscription } from '../../src/db/entities/subscription.js';
import { runCli } from '../helpers/cli.js';
import { cliEnv } from '../helpers/cli-server.js';
import { DATABASES } from '../helpers/database.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';
import { holdNotifications, releaseNotifications } from '../helpers/simulator.js';
import { completeThreeDs } from '../helpers/three-ds.js';

/*
 * Reconciliation sees holds. A card given for a trial is pre-authorised (a hold on the card, no
 * money moved) and released once the card is saved. When the gateway's notifications of it are
 * lost, or the cancel that releases it fails, `billing-admin payments sync` asks the gateway
 * about the hold and does what the webhook would: the trial starts, the hold is released.
 * Both cases run with 3-D Secure, as Midtrans asks for it, against the server's simulator.
 */
describe.each(DATABASES)('payments sync and trial card holds (%s)', (kind) => {
  let server: TestServer;
  let env: Record<string, string>;
  beforeAll(async () => {
    server = await startTestServer(kind, { env: { SIMULATOR_3DS: 'when_asked' } });
    env = cliEnv(server);
    await server.seedPlans(STANDARD_PLANS);
  });
  afterAll(() => server?.stop());

  const sim = () => server.running.billing.simulator!;
  const stored = (id: string) => server.running.billing.orm.em.fork().findOneOrFail(Subscription, id);
  const sync = (what: 'payments' | 'subscriptions', ...args: string[]) => runCli([what, 'sync', ...args, '--json'], env);
  const fault = async (body: Record<string, unknown>) => expect((await server.request('POST', '/_simulator/faults', { body })).status).toBe(200);

  /** A trial subscribed with a card that waits for 3-D Secure: the subscription and its pre-authorisation's order. */
  async function trialWaitingForCard() {
    const user = await server.createUser();
    const res = await server.api('POST', '/subscriptions/', { auth: user, body: { plan_id: 'pro-trial', payment_type: 'credit_card', token: 'tok-3ds-481111-1114' } });
    expect(res.status, res.text).toBe(201);
    expect(res.body.subscription.status).toBe('pending');
    return { user, id: res.body.subscription.id as string, orderId: res.body.card_authorization.order_id as string, redirectUrl: res.body.card_authorization.redirect_url as string };
  }

  const resultOf = (json: any, orderId: string) => json.results.find((r: { order_id: string }) => r.order_id === orderId);

  it('a 3-D Secure trial whose notifications were lost: the gateway holds 150.000 on the card; payments sync starts the trial and releases the hold, once', async () => {
    const since = new Date().toISOString();
    const { id, orderId, redirectUrl } = await trialWaitingForCard();
    await holdNotifications(server, orderId);
    expect(await completeThreeDs(redirectUrl, 'authenticate')).toBe('authorize');
    await releaseNotifications(server, { order_id: orderId, drop: true });
    expect(sim().transaction(orderId)).toMatchObject({ transaction_status: 'authorize', gross_amount: 150000 });
    expect((await stored(id)).status).toBe('pending');

    const dry = await sync('payments', '--since', since, '--dry-run');
    expect(dry.code, dry.stderr).toBe(0);
    expect(resultOf(dry.json, orderId)).toMatchObject({ kind: 'card_check', id, status_before: 'pending', gateway_status: 'authorize', result: 'would_process' });
    expect(sim().transaction(orderId)!.transaction_status).toBe('authorize');

    const run = await sync('payments', '--since', since);
    expect(run.code, run.stderr).toBe(0);
    expect(resultOf(run.json, orderId)).toMatchObject({ kind: 'card_check', id, status_before: 'pending', status_after: 'trialing', gateway_status: 'authorize', result: 'processed' });
    expect(resultOf(run.json, orderId).changes).toEqual(['trial started with the saved card', 'card hold released at the gateway']);
    const sub = await stored(id);
    expect(sub.status).toBe('trialing');
    expect(sub.cardToken).toBe(sim().transaction(orderId)!.card!.saved_token_id);
    expect(sim().transaction(orderId)!.transaction_status).toBe('cancel');

    // Again: nothing left to do, nothing reported.
    const again = await sync('payments', '--since', since);
    expect(again.code).toBe(0);
    expect(resultOf(again.json, orderId)).toBeUndefined();
  });

  it('a hold whose release got a 500 stays held after subscriptions sync; payments sync releases it', async () => {
    const since = new Date().toISOString();
    const { id, orderId, redirectUrl } = await trialWaitingForCard();
    await fault({ mode: 'http_500', operations: ['cancel'] });
    try {
      await completeThreeDs(redirectUrl, 'authenticate');
      await vi.waitFor(async () => expect((await stored(id)).status).toBe('trialing'), { timeout: 10_000, interval: 50 });
    } finally {
      await fault({ mode: 'none' });
    }
    expect(sim().transaction(orderId)!.transaction_status).toBe('authorize');

    expect((await sync('subscriptions')).code).toBe(0);
    expect(sim().transaction(orderId)!.transaction_status).toBe('authorize');

    const run = await sync('payments', '--since', since);
    expect(run.code, run.stderr).toBe(0);
    expect(resultOf(run.json, orderId)).toMatchObject({ kind: 'card_check', id, status_before: 'trialing', status_after: 'trialing', gateway_status: 'authorize', result: 'processed', changes: ['card hold released at the gateway'] });
    expect(sim().transaction(orderId)!.transaction_status).toBe('cancel');
  });
});
