import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { Invoice } from '../../src/db/entities/invoice.js';
import { Payment } from '../../src/db/entities/payment.js';
import { Subscription } from '../../src/db/entities/subscription.js';
import { verifyWallets } from '../../src/services/wallet/verify-wallets.js';
import { cliEntry, runCli } from '../helpers/cli.js';
import { DATABASES } from '../helpers/database.js';
import { startBilling } from '../helpers/billing.js';

const RUN = ['billing', 'run', '--at', '2027-02-28T10:00:00Z', '--allow-past', '--force', '--json'];

/** Starts `billing run` and kills it with SIGKILL as soon as it reports its first progress (`[done/total]`). */
function runAndKill(env: Record<string, string>): Promise<{ killed: boolean; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cliEntry(), ...RUN], {
      env: { PATH: process.env.PATH ?? '', NODE_ENV: 'test', LOG_REQUESTS: 'false', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    let killed = false;
    child.stderr.on('data', (d) => {
      stderr += d;
      if (!killed && /\[\d+\/\d+\]/.test(stderr)) killed = child.kill('SIGKILL');
    });
    child.on('error', reject);
    child.on('close', () => resolve({ killed, stderr }));
  });
}

describe.each(DATABASES)('a billing run killed mid-way (%s)', (kind) => {
  it('leaves nothing half-billed; a second run completes every renewal exactly once', async () => {
    const h = await startBilling(kind);
    try {
      const users = [];
      const ids: string[] = [];
      for (let i = 0; i < 120; i += 1) {
        const user = await h.user();
        await h.fund(user, '120000');
        users.push(user);
        ids.push((await h.subscribe(user, 'basic-monthly', 'wallet')).id);
      }
      const env = { DATABASE_URL: h.server.db.url, BILLING_URL: h.server.url };
      const crashed = await runAndKill(env);
      expect(crashed.killed, crashed.stderr).toBe(true);

      const em = () => h.server.running.billing.orm.em.fork();
      const renewedBefore = await em().count(Subscription, { id: { $in: ids }, cyclesCompleted: 2 });
      expect(renewedBefore).toBeGreaterThan(0);
      expect(renewedBefore).toBeLessThan(120);
      // Every renewal invoice that exists was paid in the same transaction: none is left open.
      expect(await em().count(Invoice, { billingReason: 'subscription_cycle', status: { $ne: 'paid' } })).toBe(0);
      expect(await em().count(Invoice, { billingReason: 'subscription_cycle' })).toBe(renewedBefore);

      const second = await runCli(RUN, env);
      expect(second.code, second.stderr).toBe(0);
      expect(second.json).toMatchObject({ renewed: 120 - renewedBefore, charged: 120 - renewedBefore, errors: [] });

      for (const id of ids) {
        expect(await em().count(Invoice, { subscription: id, billingReason: 'subscription_cycle', status: 'paid' }), id).toBe(1);
        expect(await em().count(Payment, { subscription: id, status: 'settled' }), id).toBe(2);
      }
      for (const user of users) expect(await h.balance(user)).toBe('20000.00');
      expect(await verifyWallets(h.ctx())).toMatchObject({ ok: true });
      const third = await runCli(RUN, env);
      expect(third.json).toMatchObject({ subscriptions: 0 });
    } finally {
      await h.stop();
    }
  }, 240_000);
});
