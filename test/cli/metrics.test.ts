import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditEvent } from '../../src/db/entities/audit-event.js';
import { BillableMetric } from '../../src/db/entities/billable-metric.js';
import { runCli } from '../helpers/cli.js';
import { cliEnv } from '../helpers/cli-server.js';
import { DATABASES } from '../helpers/database.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { dbOf } from '../helpers/subscriptions.js';

/*
 * `billing-admin metrics …`: the staff API's use cases from the command line, `--json` printing
 * the API's very body, a reason required for every change and kept in the audit trail with the
 * operator, refusals exiting as the API answers.
 */

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
let serial = 0;
const nextCode = (prefix = 'cli') => `${prefix}${process.pid}_${++serial}`;

describe.each(DATABASES)('billing-admin metrics (%s)', { timeout: 180_000 }, (kind) => {
  let server: TestServer;
  let env: Record<string, string>;
  let readKey: string;
  const cli = (args: string[], json = true) => runCli(json ? ['--json', ...args] : args, { ...env, BILLING_OPERATOR: 'ops-oncall' });
  const api = (path: string) => server.api('GET', path, { headers: bearer(readKey) });
  const auditOf = (id: string) => dbOf(server).find(AuditEvent, { targetId: id }, { orderBy: { occurredAt: 'asc' } });

  beforeAll(async () => {
    server = await startTestServer(kind);
    env = cliEnv(server);
    readKey = (await cli(['api-keys', 'create', '--reason', 'test: audited change', '--name', 'reporting', '--scope', 'read'])).json.key;
  });
  afterAll(() => server?.stop());

  it('create, show, list and archive: the API body with --json, a readable table without, the operator and reason in the trail', async () => {
    const code = nextCode('storage');
    const made = await cli(['metrics', 'create', '--code', code, '--name', 'Storage (GB, peak)', '--aggregation', 'max', '--field', 'gb',
      '--filter', 'region=eu', '--filter', 'region=us', '--filter', 'tier=gold', '--description', 'Peak storage', '--reason', 'storage plans']);
    expect(made.code, made.stderr).toBe(0);
    expect(made.json).toEqual({ id: expect.any(String), code, name: 'Storage (GB, peak)', description: 'Peak storage', aggregation: 'max', field: 'gb',
      filters: { region: ['eu', 'us'], tier: ['gold'] }, status: 'active', archived_at: null, created_at: expect.any(String) });
    expect((await api(`/admin/metrics/${code}/`)).body).toEqual(made.json);
    expect((await cli(['metrics', 'show', made.json.id])).json).toEqual(made.json);
    const human = await cli(['metrics', 'show', code], false);
    expect(human.stdout).toMatch(/aggregation\s+max/);

    const calls = await cli(['metrics', 'create', '--code', nextCode('calls'), '--name', 'API calls', '--aggregation', 'count', '--reason', 'api plans'], false);
    expect(calls.code, calls.stderr).toBe(0);
    expect(calls.stdout).toMatch(/Created metric \S+ \(.+\): count\./);

    const table = await cli(['metrics', 'list', '--active'], false);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/^code\s+name\s+aggregation\s+field\s+filters\s+status/m);
    expect(table.stdout).toMatch(new RegExp(`${code}\\s+Storage \\(GB, peak\\)\\s+max\\s+gb\\s+region=eu\\|us tier=gold\\s+active`));

    const archived = await cli(['metrics', 'archive', code, '--reason', 'storage retired']);
    expect(archived.code, archived.stderr).toBe(0);
    expect(archived.json).toMatchObject({ id: made.json.id, status: 'archived', archived_at: expect.any(String) });
    expect((await api(`/admin/metrics/${made.json.id}/`)).body).toEqual(archived.json);
    const twice = await cli(['metrics', 'archive', code, '--reason', 'again']);
    expect(twice.code).toBe(3);
    expect(twice.json.error.code).toBe('invalid_state');

    const listed = await cli(['metrics', 'list', '--archived', '--page-size', '100']);
    const fromApi = (await api('/admin/metrics/?active=false&page_size=100')).body;
    expect(listed.json).toEqual({ count: fromApi.count, results: fromApi.results });
    expect(listed.json.results.map((m: { id: string }) => m.id)).toContain(made.json.id);

    expect((await auditOf(made.json.id)).map((e) => [e.action, e.actorType, e.actorName, e.reason])).toEqual([
      ['metric.create', 'cli', 'ops-oncall', 'storage plans'],
      ['metric.archive', 'cli', 'ops-oncall', 'storage retired'],
    ]);
  });

  it('refuses what the API refuses, with the same field named; a taken code exits 3; nothing changes without --reason', async () => {
    const before = await dbOf(server).count(BillableMetric, {});
    const noField = await cli(['metrics', 'create', '--code', nextCode(), '--name', 'Sum', '--aggregation', 'sum', '--reason', 'x'], false);
    expect(noField.code).toBe(2);
    expect(noField.stderr).toContain('field');
    const bad = await cli(['metrics', 'create', '--code', 'Not Valid', '--name', 'x', '--aggregation', 'average', '--reason', 'x']);
    expect(bad.code).toBe(2);
    expect(bad.json.error.code).toBe('validation_error');
    expect((await cli(['metrics', 'create', '--code', nextCode(), '--name', 'x', '--aggregation', 'count', '--filter', 'novalue', '--reason', 'x'])).code).toBe(2);
    const noReason = await cli(['metrics', 'create', '--code', nextCode(), '--name', 'No reason', '--aggregation', 'count']);
    expect(noReason.code).toBe(2);
    expect(noReason.json.error.message).toContain('--reason');
    expect(await dbOf(server).count(BillableMetric, {})).toBe(before);

    const kept = (await cli(['metrics', 'create', '--code', nextCode(), '--name', 'Kept', '--aggregation', 'count', '--reason', 'x'])).json;
    const twin = await cli(['metrics', 'create', '--code', kept.code, '--name', 'Twin', '--aggregation', 'count', '--reason', 'x']);
    expect(twin.code).toBe(3);
    expect(twin.json.error.code).toBe('conflict');
    expect((await cli(['metrics', 'archive', kept.code])).code).toBe(2);
    expect((await api(`/admin/metrics/${kept.id}/`)).body.status).toBe('active');
    expect((await cli(['metrics', 'show', 'no_such_metric'])).code).toBe(4);
  });
});
