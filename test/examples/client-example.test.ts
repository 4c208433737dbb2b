import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { prepareDatabase, type Account } from '../helpers/reliability/accounts.js';
import { API, call, PROJECT_ROOT, startServerProcess, type ServerProcess } from '../helpers/reliability/server-process.js';

/** Runs a script as a client developer would (`npx tsx FILE`), with only the environment given. */
function runScript(file: string, env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', file], { cwd: PROJECT_ROOT, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

// docs/api.md's client example, type-checked by `tsc` (tsconfig includes examples/) and run here, twice.
describe('examples/client/subscribe-and-top-up.ts against a running server', () => {
  let db: TestDatabase;
  let server: ServerProcess;
  let alice: Account;
  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    ({ alice } = await prepareDatabase(db.url, ['alice']));
    server = await startServerProcess({ databaseUrl: db.url });
  });
  afterAll(async () => {
    await server?.stop();
    await db?.drop();
  });

  it('subscribes, pays through the simulator, lists invoices, tops up and uses a session', async () => {
    const run = await runScript('examples/client/subscribe-and-top-up.ts', { BILLING_URL: server.url, BILLING_USERNAME: alice.username, BILLING_PASSWORD: alice.password });
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    const steps = Object.fromEntries(run.stdout.trim().split('\n').map((line) => {
      const { step, ...rest } = JSON.parse(line) as { step: string } & Record<string, unknown>;
      return [step, rest];
    }));
    expect(steps.plans).toMatchObject({ plan: 'basic-monthly', revalidated: true, data: null });
    expect(steps.subscribed).toMatchObject({ status: 'pending', replayed: true });
    expect(steps.paid).toMatchObject({ status: 'active' });
    expect(steps.invoices).toMatchObject({ count: 1, statuses: ['paid'], totals: ['50000.00'] });
    expect(steps.topped_up).toMatchObject({ balance: '50000.00', currency: 'IDR' });
    expect(steps.session).toMatchObject({ cancel_at_period_end: true, status: 'active' });
    expect(steps.session.marked_read).not.toBeNull();

    // What the script did is what the server holds.
    const basic = alice;
    const wallet = await call(server.url, 'GET', `${API}/wallet/me/`, { basic });
    expect(wallet.body.balance).toBe('50000.00');
    const subscriptions = await call(server.url, 'GET', `${API}/subscriptions/`, { basic });
    expect(subscriptions.body.count).toBe(1);
    expect(steps.made_room).toEqual({ ended: null });
  }, 60_000);

  it('runs again for the same user: it ends the subscription the first run left active, then does it all again', async () => {
    const run = await runScript('examples/client/subscribe-and-top-up.ts', { BILLING_URL: server.url, BILLING_USERNAME: alice.username, BILLING_PASSWORD: alice.password });
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    const steps = Object.fromEntries(run.stdout.trim().split('\n').map((line) => {
      const { step, ...rest } = JSON.parse(line) as { step: string } & Record<string, unknown>;
      return [step, rest];
    }));
    const basic = alice;
    const subscriptions = await call(server.url, 'GET', `${API}/subscriptions/?ordering=created_at`, { basic });
    expect(subscriptions.body.count).toBe(2);
    const [first, second] = subscriptions.body.results as Array<{ id: string; status: string }>;
    expect(steps.made_room).toEqual({ ended: first.id });
    expect(first.status).toBe('canceled');
    expect(steps.paid).toMatchObject({ subscription: second.id, status: 'active' });
    expect(steps.invoices).toMatchObject({ count: 2, statuses: ['paid', 'paid'] });
    expect(steps.topped_up).toMatchObject({ balance: '100000.00' });
    expect(steps.session).toMatchObject({ cancel_at_period_end: true, status: 'active' });
  }, 60_000);
});
