import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProgress } from '../../cli/progress.js';
import { runCli } from '../helpers/cli.js';
import { cliEnv } from '../helpers/cli-server.js';
import { DATABASES } from '../helpers/database.js';
import { startTestServer, type Credentials, type TestServer } from '../helpers/server.js';
import { gatewayStatus } from '../helpers/subscriptions.js';
import { postTopup, settleTopup, walletBalance } from '../helpers/topups.js';

/*
 * A CLI that says what did not happen: bad input is refused (2) before anything is done, a user
 * or order that does not exist is 4, a repeat says it was already applied, and long runs show
 * `[done/total]`.
 */

describe.each(DATABASES)('billing-admin input, not-found and repeats on %s', (kind) => {
  let server: TestServer;
  let alice: Credentials & { id: string };
  let env: Record<string, string>;
  let settledOrder: string;

  beforeAll(async () => {
    server = await startTestServer(kind);
    env = cliEnv(server);
    alice = await server.createUser();
    const topup = await postTopup(server, alice, { amount: 100000, payment_type: 'bank_transfer' });
    settledOrder = topup.body.order_id;
    await settleTopup(server, settledOrder);
  });
  afterAll(() => server?.stop());

  it('simulate refuses a bad --amount or --fraud-status with exit 2 and refunds nothing', async () => {
    for (const args of [
      ['refund', settledOrder, '--amount', 'abc'],
      ['refund', settledOrder, '--amount', '-5'],
      ['refund', settledOrder, '--amount', '0'],
      ['settle', settledOrder, '--amount', '5000'],
      ['capture', settledOrder, '--fraud-status', 'maybe'],
      ['explode', settledOrder],
    ]) {
      const res = await runCli(['simulate', ...args], env);
      expect(res.code, `${args.join(' ')}: ${res.stderr}`).toBe(2);
    }
    // The simulator's own refusal of an input (a fraction of a rupiah) is bad input too.
    expect((await runCli(['simulate', 'refund', settledOrder, '--amount', '10.5'], env)).code).toBe(2);
    expect((await gatewayStatus(server, settledOrder)).transaction_status).toBe('settlement');
    expect(await walletBalance(server, alice)).toBe('100000.00');
  }, 120_000);

  it('simulate on an order the gateway never saw exits 4', async () => {
    expect((await runCli(['simulate', 'settle', 'TOPUP-NOSUCHORDER'], env)).code).toBe(4);
  });

  it('subscriptions sync --user for a user that does not exist exits 4', async () => {
    const res = await runCli(['subscriptions', 'sync', '--user', 'nobody-at-all'], env);
    expect(res.code).toBe(4);
    expect(res.stderr).toMatch(/not_found/);
    expect((await runCli(['subscriptions', 'sync', '--user', alice.username, '--json'], env)).code).toBe(0);
  });

  it('wallet adjust with a reference already used says so, and posts nothing', async () => {
    const args = ['wallet', 'adjust', alice.username, '5000', '--reason', 'goodwill', '--reference', `TICKET-${kind}`];
    const first = await runCli([...args, '--json'], env);
    expect(first.code).toBe(0);
    expect(first.json).toMatchObject({ already_applied: false, wallet: { balance: '105000.00' } });
    const again = await runCli([...args, '--json'], env);
    expect(again.code).toBe(0);
    expect(again.json).toMatchObject({ already_applied: true, wallet: { balance: '105000.00' }, transaction: { id: first.json.transaction.id } });
    const human = await runCli(args, env);
    expect(human.stdout).toMatch(/^Already applied/);
    expect(await walletBalance(server, alice)).toBe('105000.00');
  }, 60_000);

  it('a long run off a terminal prints plain [done/total] lines without control characters', async () => {
    const res = await runCli(['webhooks', 'replay', '--reason', 'test: audited change', '--status', 'failed,received', '--since', '2000-01-01', '--dry-run'], env);
    expect(res.code).toBe(0);
    expect(res.stderr).not.toMatch(/[\r\x1b]/);
    const sync = await runCli(['subscriptions', 'sync'], env);
    expect(sync.stderr).not.toMatch(/[\r\x1b]/);
  });
});

describe('progress on a terminal', () => {
  it('rewrites one line with [done/total], the rate and the time left, and ends it', () => {
    let t = 0;
    let out = '';
    const progress = startProgress({ tty: true, now: () => t, write: (s) => (out += s) });
    for (let done = 1; done <= 10; done++) {
      t = done * 500; // two a second
      progress.update(done, 10, `item ${done}`);
    }
    progress.finish();
    const frames = out.split('\r\x1b[2K').filter(Boolean);
    expect(frames[0]).toBe('[1/10] 2.0/s ETA 0:05 item 1');
    expect(frames.at(-1)).toBe('[10/10] 2.0/s ETA 0:00 item 10\n');
  });

  it('off a terminal prints every n-th item and the last as plain lines', () => {
    let out = '';
    const progress = startProgress({ tty: false, every: 4, write: (s) => (out += s) });
    for (let done = 1; done <= 10; done++) progress.update(done, 10, `item ${done}`);
    progress.finish();
    expect(out).toBe('[4/10] item 4\n[8/10] item 8\n[10/10] item 10\n');
  });
});
