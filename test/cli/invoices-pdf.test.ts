import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from '../helpers/database.js';
import { runCli } from '../helpers/cli.js';
import { pdfText } from '../helpers/pdf.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';
import { activeSubscription } from '../helpers/subscriptions.js';

describe.each(DATABASES)('billing-admin invoices pdf on %s', (kind) => {
  let server: TestServer;
  let dir: string;
  beforeAll(async () => {
    server = await startTestServer(kind);
    await server.seedPlans(STANDARD_PLANS);
    dir = await mkdtemp(join(tmpdir(), 'invoices-pdf-'));
  });
  afterAll(async () => {
    await server?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const env = () => ({ DATABASE_URL: server.db.url, SESSION_SECRET: 'cli-test', BILLING_COMPANY_NAME: 'PT Contoh Langganan Indonesia', BILLING_TAX_ID: '01.234.567.8-901.000' });

  it('writes the invoice its customer downloads to --out, or to NUMBER.pdf in the current directory', async () => {
    const user = await server.createUser();
    const { payment } = await activeSubscription(server, user, 'basic-monthly');
    const invoice = (await server.api('GET', `/invoices/${payment.invoice_id}/`, { auth: user })).body;

    const out = join(dir, 'invoice.pdf');
    const res = await runCli(['invoices', 'pdf', invoice.number, '--out', out, '--json'], env());
    expect(res.code).toBe(0);
    const pdf = await readFile(out);
    expect(res.json).toEqual({ number: invoice.number, file: out, bytes: pdf.length });
    const text = await pdfText(pdf);
    expect(text).toContain(invoice.number);
    expect(text).toContain('PT Contoh Langganan Indonesia');
    expect(text).toContain('NPWP: 01.234.567.8-901.000');
    expect(text).toMatch(/Rp 50\.000/);

    const here = await runCli(['invoices', 'pdf', invoice.number.toLowerCase()], env(), undefined, { cwd: dir });
    expect(here.code).toBe(0);
    expect(here.stdout).toContain(`${invoice.number}.pdf`);
    expect((await readFile(join(dir, `${invoice.number}.pdf`))).subarray(0, 5).toString()).toBe('%PDF-');
  });

  it('an unknown number exits 4 and writes nothing', async () => {
    const out = join(dir, 'missing.pdf');
    const res = await runCli(['invoices', 'pdf', 'INV-1999-000001', '--out', out], env());
    expect(res.code).toBe(4);
    expect(res.stderr).toMatch(/not_found/);
    await expect(readFile(out)).rejects.toThrow();
  });

  it('a bad BILLING_LOCALE is a configuration error (exit 2)', async () => {
    const res = await runCli(['invoices', 'pdf', 'INV-1999-000001'], { ...env(), BILLING_LOCALE: 'not a locale' });
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/BILLING_LOCALE/);
  });
});
