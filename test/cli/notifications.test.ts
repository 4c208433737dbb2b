import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import type { User } from '../../src/db/entities/user.js';
import { openOrm, type Orm } from '../../src/db/orm.js';
import { systemClock } from '../../src/domain/clock.js';
import { runCli } from '../helpers/cli.js';
import { createTestDatabase, DATABASES, type TestDatabase } from '../helpers/database.js';
import { makeUser } from '../helpers/factories.js';
import { PAYMENT_PENDING_DATA, deliveryConfig, recordEvent, startReceiver, startSmtpCapture, type Receiver, type SmtpCapture } from '../helpers/delivery.js';

describe.each(DATABASES)('billing-admin notifications on %s', (kind) => {
  let db: TestDatabase;
  let orm: Orm;
  let smtp: SmtpCapture;
  let receiver: Receiver;
  let env: Record<string, string>;
  let config: Config;
  let user: User;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    smtp = await startSmtpCapture();
    receiver = await startReceiver();
    env = {
      DATABASE_URL: db.url,
      SESSION_SECRET: 'cli-test',
      SMTP_URL: smtp.url,
      MAIL_FROM: 'billing@example.test',
      OUTBOUND_WEBHOOK_URL: receiver.url,
      OUTBOUND_WEBHOOK_SECRET: 'whsec_cli',
      OUTBOUND_WEBHOOK_TIMEOUT_MS: '1000',
    };
    expect((await runCli(['db', 'migrate'], env)).code).toBe(0);
    orm = await openOrm(db.url);
    config = deliveryConfig(db.url, env);
    user = await makeUser(orm.em.fork());
  });
  afterAll(async () => {
    await orm?.close(true);
    await smtp?.stop();
    await receiver?.stop();
    await db?.drop();
  });

  const event = async (type: Parameters<typeof recordEvent>[4] = 'payment_pending') => {
    const entries = await recordEvent(orm, config, systemClock, user, type, PAYMENT_PENDING_DATA);
    return Object.fromEntries(entries.map((n) => [n.channel, n.id])) as Record<'email' | 'webhook' | 'in_app', string>;
  };

  it('delivers what is due, and lists entries by channel, status and user with the delivery bookkeeping', async () => {
    const ids = await event();
    const run = await runCli(['notifications', 'deliver', '--json'], env);
    expect(run.code, run.stderr).toBe(0);
    expect(run.json.delivered.sort()).toEqual([ids.email, ids.webhook].sort());
    expect(smtp.messages).toHaveLength(1);
    expect(receiver.posts).toHaveLength(1);

    const list = await runCli(['notifications', 'list', '--channel', 'email', '--status', 'sent', '--user', user.username, '--json'], env);
    expect(list.code, list.stderr).toBe(0);
    expect(list.json).toEqual([
      expect.objectContaining({ id: ids.email, channel: 'email', status: 'sent', notification_type: 'payment_pending', user_id: user.id, username: user.username, attempts: 1, last_error: null }),
    ]);
    const human = await runCli(['notifications', 'list', '--user', user.id], env);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain(ids.in_app);
    expect(human.stdout).toMatch(/notification_type\s+channel\s+status/);
  });

  it('shows every attempt of a failing webhook and redelivers a failed email once the server accepts it', async () => {
    receiver.behaviour = 'fail';
    smtp.behaviour = 'reject';
    const ids = await event('payment_failed');
    const run = await runCli(['notifications', 'deliver'], env);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/Delivered 0, retrying later 1, failed 1\./);

    const show = await runCli(['notifications', 'show', ids.webhook, '--json'], env);
    expect(show.json).toMatchObject({ id: ids.webhook, status: 'queued', attempts: 1, last_error: expect.stringMatching(/^HTTP 500/) });
    expect(show.json.delivery_attempts).toEqual([expect.objectContaining({ outcome: 'failed', http_status: 500 })]);

    const failed = await runCli(['notifications', 'list', '--status', 'failed', '--json'], env);
    expect(failed.json.map((n: { id: string }) => n.id)).toEqual([ids.email]);
    expect(failed.json[0].last_error).toMatch(/^SMTP 550/);

    smtp.behaviour = 'accept';
    const redeliver = await runCli(['notifications', 'redeliver', '--reason', 'test: audited change', ids.email, '--json'], env);
    expect(redeliver.code, redeliver.stderr).toBe(0);
    expect(redeliver.json).toEqual([expect.objectContaining({ id: ids.email, status: 'sent', attempts: 1, last_error: null })]);
    expect(smtp.messages.at(-1)!.headers['x-billing-notification-id']).toBe(ids.email);
    receiver.behaviour = 'ok';
  });

  it('exits non-zero with the reason when a redelivery fails again', async () => {
    const ids = await event('topup_succeeded');
    expect((await runCli(['notifications', 'deliver'], env)).code).toBe(0);

    receiver.behaviour = 'fail';
    const again = await runCli(['notifications', 'redeliver', '--reason', 'test: audited change', ids.webhook], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/could not be delivered.*HTTP 500/);
    receiver.behaviour = 'ok';
    const entry = await runCli(['notifications', 'show', ids.webhook, '--json'], env);
    expect(entry.json).toMatchObject({ status: 'queued', attempts: 1 });
  });

  it('refuses entries that cannot be redelivered, unknown ids and bad filters with distinct exit statuses', async () => {
    receiver.behaviour = 'fail';
    const ids = await event('topup_expired');
    expect((await runCli(['notifications', 'deliver'], env)).code).toBe(0);
    receiver.behaviour = 'ok';

    expect((await runCli(['notifications', 'redeliver', '--reason', 'test: audited change', ids.webhook], env)).code).toBe(3); // queued, waiting for its retry
    expect((await runCli(['notifications', 'redeliver', '--reason', 'test: audited change', ids.in_app], env)).code).toBe(3);
    expect((await runCli(['notifications', 'redeliver', '--reason', 'test: audited change', '5a0a7c52-7d2e-4f38-9a51-0f6a6f0d7c11'], env)).code).toBe(4);
    expect((await runCli(['notifications', 'list', '--channel', 'sms'], env)).code).toBe(2);
    expect((await runCli(['notifications', 'show', 'nope'], env)).code).toBe(4);
  });

  // Last: it leaves queued entries that a configured deliver would send.
  it('with no channel configured, deliver says so and exits 0, sending nothing (issue 30)', async () => {
    const ids = await event();
    const bare = { DATABASE_URL: db.url, SESSION_SECRET: 'cli-test' };
    const run = await runCli(['notifications', 'deliver', '--json'], bare);
    expect(run.code, run.stderr).toBe(0);
    expect(run.json).toEqual({ delivered: [], retrying: [], failed: [], errors: {} });
    expect(run.stderr).toContain('Neither SMTP_URL nor OUTBOUND_WEBHOOK_URL is set');
    const human = await runCli(['notifications', 'deliver'], bare);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain('Delivered 0, retrying later 0, failed 0.');
    // Still queued for a deployment that can send them.
    const list = await runCli(['notifications', 'list', '--status', 'queued', '--user', user.username, '--json'], bare);
    expect(list.json.map((e: { id: string }) => e.id)).toEqual(expect.arrayContaining([ids.email, ids.webhook]));
  });

});
