import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { User } from '../../src/db/entities/user.js';
import { runCli } from '../helpers/cli.js';
import { DATABASES } from '../helpers/database.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { dbOf } from '../helpers/subscriptions.js';

/*
 * `customers create/update --tax-profile` checks a NIK as the API does (as Dukcapil writes it):
 * the impossible 3171019999990001 (born on day 99 of month 99) is refused, exit 2 naming the
 * field, and nothing is stored.
 */

describe.each(DATABASES)('billing-admin customers --tax-profile and the NIK (%s)', { timeout: 120_000 }, (kind) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(kind);
  });
  afterAll(() => server?.stop());

  const cli = (args: string[], stdin: string) => runCli(args, { DATABASE_URL: server.db.url, SESSION_SECRET: 'cli-test', BILLING_OPERATOR: 'ops-oncall' }, stdin);
  const profile = (nik: string) => JSON.stringify({ buyer_type: 'individual', nik, name: 'Siti Aminah', address: 'Jl. Melati 3, Depok' });

  it('refuses an impossible NIK and stores no customer; takes a NIK Dukcapil could have written', async () => {
    const refused = await cli(['customers', 'create', '--external-id', `nik-${process.pid}-a`, '--tax-profile', '-', '--reason', 'onboarding'], profile('3171019999990001'));
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toContain('nik');
    expect(refused.stderr).toMatch(/day from 01 to 31/);
    expect(await dbOf(server).count(User, { externalId: `nik-${process.pid}-a` })).toBe(0);

    const made = await cli(['--json', 'customers', 'create', '--external-id', `nik-${process.pid}-b`, '--tax-profile', '-', '--reason', 'onboarding'], profile('3171015505900001'));
    expect(made.code, made.stderr).toBe(0);
    expect(made.json.tax_profile).toMatchObject({ buyer_type: 'individual', nik: '3171015505900001' });

    const update = await cli(['customers', 'update', `ext:nik-${process.pid}-b`, '--tax-profile', '-', '--reason', 'typo'], profile('9571015505900001'));
    expect(update.code, update.stderr).toBe(2);
    expect(update.stderr).toMatch(/province code from 11 to 94/);
    expect((await dbOf(server).findOneOrFail(User, { externalId: `nik-${process.pid}-b` })).taxProfile).toMatchObject({ nik: '3171015505900001' });
  });
});
