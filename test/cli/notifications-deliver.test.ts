import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { openOrm, type Orm } from '../../src/db/orm.js';
import { systemClock } from '../../src/domain/clock.js';
import { runCli } from '../helpers/cli.js';
import { createTestDatabase, DATABASES, type TestDatabase } from '../helpers/database.js';
import { makeUser } from '../helpers/factories.js';
import { PAYMENT_PENDING_DATA, deliveryConfig, recordEvent, startSmtpCapture, type SmtpCapture } from '../helpers/delivery.js';

/*
 * Issue 40, row 9, from the operator's side: SMTP down, then fixed. `notifications deliver`
 * says why each email was not sent; once the server is back, `deliver --now` sends the
 * backed-off ones at once instead of waiting for their retry time.
 */
describe.each(DATABASES)('billing-admin notifications deliver --now on %s', (kind) => {
  let db: TestDatabase;
  let orm: Orm;
  let smtp: SmtpCapture;
  let env: Record<string, string>;
  let config: Config;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    smtp = await startSmtpCapture('defer');
    env = { DATABASE_URL: db.url, SESSION_SECRET: 'cli-test', SMTP_URL: smtp.url, MAIL_FROM: 'billing@example.test' };
    expect((await runCli(['db', 'migrate'], env)).code).toBe(0);
    orm = await openOrm(db.url);
    config = deliveryConfig(db.url, env);
  });
  afterAll(async () => {
    await orm?.close(true);
    await smtp?.stop();
    await db?.drop();
  });

  it('says why an email was not sent, waits for its retry, and sends it at once with --now', async () => {
    const user = await makeUser(orm.em.fork());
    const entries = await recordEvent(orm, config, systemClock, user, 'payment_pending', PAYMENT_PENDING_DATA);
    const id = entries.find((n) => n.channel === 'email')!.id;

    const down = await runCli(['notifications', 'deliver', '--json'], env);
    expect(down.code, down.stderr).toBe(0);
    expect(down.json).toEqual({ delivered: [], retrying: [id], failed: [], errors: { [id]: expect.stringMatching(/451/) } });

    smtp.behaviour = 'accept';
    const waiting = await runCli(['notifications', 'deliver'], env);
    expect(waiting.stdout).toMatch(/Delivered 0, retrying later 0, failed 0/);
    expect(smtp.messages).toHaveLength(0);

    const now = await runCli(['notifications', 'deliver', '--now', '--json'], env);
    expect(now.code, now.stderr).toBe(0);
    expect(now.json).toEqual({ delivered: [id], retrying: [], failed: [], errors: {} });
    expect(smtp.messages).toHaveLength(1);
    const shown = await runCli(['notifications', 'show', id, '--json'], env);
    expect(shown.json).toMatchObject({ status: 'sent', attempts: 2, last_error: null });
  });

  it('prints each unsent entry with its reason', async () => {
    smtp.behaviour = 'reject';
    const user = await makeUser(orm.em.fork());
    const entries = await recordEvent(orm, config, systemClock, user, 'payment_pending', PAYMENT_PENDING_DATA);
    const id = entries.find((n) => n.channel === 'email')!.id;
    const run = await runCli(['notifications', 'deliver', '--now'], env);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(`failed   ${id}: `);
    expect(run.stdout).toMatch(/550/);
  });
});
