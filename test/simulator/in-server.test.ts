import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { cliEnv } from '../helpers/cli-server.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { completeThreeDs } from '../helpers/three-ds.js';

// These orders are not the service's: their notifications go nowhere.
const LOST = 'http://127.0.0.1:9/lost';

/** The simulator as the server mounts it: its settings from the environment, and `billing-admin simulate`. */
describe('the mounted simulator, configured by the environment', () => {
  let server: TestServer;
  let env: Record<string, string>;
  beforeAll(async () => {
    server = await startTestServer('sqlite', { env: { SIMULATOR_3DS: 'when_asked', SIMULATOR_NOTIFICATION_RETRY_MS: '10,20', SIMULATOR_REFUND_CONFIRMATION_MS: '0' } });
    env = cliEnv(server);
  });
  afterAll(() => server?.stop());

  const cardCharge = (orderId: string, token: string) =>
    server.running.billing.gateway.charge({ orderId, grossAmount: '150000', currency: 'IDR', paymentType: 'credit_card', cardToken: token, saveCard: true, notificationUrl: LOST });
  const sim = () => server.running.billing.simulator!;

  it('SIMULATOR_3DS=when_asked sends a customer-initiated sim-card-accept charge to 3-D Secure; the page completes it', async () => {
    const orderId = `SIMCFG-${Date.now()}-1`;
    await cardCharge(orderId, 'sim-card-accept-4811');
    const tx = sim().transaction(orderId)!;
    expect(tx.transaction_status).toBe('pending');
    expect(await completeThreeDs(tx.card!.redirect_url!, 'authenticate')).toBe('capture');
    expect(sim().transaction(orderId)!.card!.saved_token_id).toEqual(expect.any(String));
  });

  it('billing-admin simulate next-day settles card captures; settle needs an order id; tick runs what is due', async () => {
    const orderId = `SIMCFG-${Date.now()}-2`;
    await cardCharge(orderId, 'sim-card-accept-4811');
    await completeThreeDs(sim().transaction(orderId)!.card!.redirect_url!);
    const nextDay = await runCli(['simulate', 'next-day', '--json'], env);
    expect(nextDay.code, nextDay.stderr).toBe(0);
    expect(nextDay.json.changed).toContain(orderId);
    expect(sim().transaction(orderId)!.transaction_status).toBe('settlement');

    const missing = await runCli(['simulate', 'settle'], env);
    expect(missing.code).toBe(2);
    const tick = await runCli(['simulate', 'tick', '--json'], env);
    expect(tick.code, tick.stderr).toBe(0);
    expect(tick.json).toEqual({ changed: expect.any(Array) });
  });

  it('SIMULATOR_NOTIFICATION_RETRY_MS shortens the retry schedule (the lost URL is retried twice)', async () => {
    const orderId = `SIMCFG-${Date.now()}-3`;
    await cardCharge(orderId, 'sim-card-deny-1');
    await completeThreeDs(sim().transaction(orderId)!.card!.redirect_url!);
    const attempts = () => sim().deliveries().filter((d) => d.order_id === orderId && d.transaction_status === 'deny');
    const deadline = Date.now() + 5000;
    while (attempts().length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(attempts().map((d) => d.attempt)).toEqual([0, 1, 2]);
  });
});
