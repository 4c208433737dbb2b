/**
 * Makes docs/invoice-example.png, the rendered page docs/documents.md shows: a real server on a
 * throwaway SQLite database with the built-in simulator, a customer who subscribes to Basic,
 * upgrades to Pro ten days in (the proration invoice: the unused Basic time credited, the Pro
 * time charged), pays, and is refunded part of it. Page 1 of the invoice's PDF and of the
 * refund's credit note are rendered with pdftoppm (docs/credit-note-example.png).
 *
 *   npx tsx scripts/render-invoice-example.ts
 *
 * The logo (docs/example-logo.png) is drawn here too, so that the example needs no image tool.
 */
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import PDFDocument from 'pdfkit';
import { ManualClock } from '../src/domain/clock.js';
import { PROJECT_ROOT } from '../src/project-root.js';
import { STANDARD_PLANS, startTestServer } from '../test/helpers/server.js';
import { activeSubscription, simulate } from '../test/helpers/subscriptions.js';

const DOCS = join(PROJECT_ROOT, 'docs');
const LOGO = join(DOCS, 'example-logo.png');
const PAGE_PNG = join(DOCS, 'invoice-example.png');
const CREDIT_NOTE_PNG = join(DOCS, 'credit-note-example.png');
const DAY = 24 * 60 * 60 * 1000;

function pdfBytes(draw: (doc: PDFKit.PDFDocument) => void, size: [number, number]): Promise<Buffer> {
  const doc = new PDFDocument({ size, margin: 0, info: { CreationDate: new Date('2026-01-01T00:00:00Z') } });
  const chunks: Buffer[] = [];
  const done = new Promise<Buffer>((resolve) => doc.on('end', () => resolve(Buffer.concat(chunks))));
  doc.on('data', (c: Buffer) => chunks.push(c));
  draw(doc);
  doc.end();
  return done;
}

/** Renders page 1 of a PDF to `out` (PNG) at `dpi`. */
function toPng(pdf: Buffer, out: string, dpi: number): void {
  const dir = mkdtempSync(join(tmpdir(), 'invoice-example-'));
  try {
    writeFileSync(join(dir, 'in.pdf'), pdf);
    execFileSync('pdftoppm', ['-png', '-r', String(dpi), '-f', '1', '-l', '1', '-singlefile', join(dir, 'in.pdf'), join(dir, 'out')]);
    writeFileSync(out, readFileSync(join(dir, 'out.png')));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A made-up company's logo: a blue badge with a white "C" and the name beside it. */
async function drawLogo(): Promise<void> {
  const bold = createRequire(import.meta.url).resolve('dejavu-fonts-ttf/ttf/DejaVuSans-Bold.ttf');
  const pdf = await pdfBytes(
    (doc) => {
      doc.roundedRect(2, 2, 44, 44, 10).fill('#0b5cad');
      doc.circle(24, 24, 13).lineWidth(6).strokeColor('#ffffff').stroke();
      doc.rect(30, 18, 12, 12).fill('#0b5cad');
      doc.font(bold).fontSize(19).fillColor('#1f2933').text('Contoh', 56, 6, { lineBreak: false });
      doc.font(bold).fontSize(8.5).fillColor('#6b7280').text('LANGGANAN', 57, 30, { lineBreak: false, characterSpacing: 2.2 });
    },
    [150, 48],
  );
  toPng(pdf, LOGO, 300);
}

async function main(): Promise<void> {
  await drawLogo();
  const clock = new ManualClock(new Date('2026-01-15T03:00:00Z'));
  const server = await startTestServer('sqlite', {
    clock,
    env: {
      BILLING_COMPANY_NAME: 'PT Contoh Langganan Indonesia',
      BILLING_COMPANY_ADDRESS: 'Jl. Jenderal Sudirman Kav. 52-53|Senayan, Kebayoran Baru|Jakarta Selatan 12190',
      BILLING_TAX_ID: '01.234.567.8-901.000',
      BILLING_LOGO_PATH: LOGO,
    },
  });
  try {
    await server.seedPlans(STANDARD_PLANS);
    const user = await server.createUser({ username: 'siti', firstName: 'Siti', lastName: 'Rahayu', email: 'siti.rahayu@example.co.id', phone: '+62 812 3456 7890' });
    const { subscription } = await activeSubscription(server, user, 'basic-monthly', 'gopay');
    clock.advance(10 * DAY);
    const changed = await server.api('POST', `/subscriptions/${subscription.id}/change-plan/`, { auth: user, body: { plan_id: 'pro-monthly', immediate: true } });
    if (changed.status !== 200) throw new Error(`change-plan: ${changed.status} ${changed.text}`);
    await simulate(server, changed.body.payment.order_id, 'settle');
    clock.advance(2 * DAY);
    const refund = await server.api('POST', `/payments/${changed.body.payment.id}/refund/`, { auth: user, body: { amount: '17742.00', reason: 'goodwill' } });
    if (refund.status !== 200) throw new Error(`refund: ${refund.status} ${refund.text}`);

    const pdf = async (path: string) => {
      const res = await fetch(`${server.url}/api/subscriptions${path}`, {
        headers: { authorization: `Basic ${Buffer.from(`${user.username}:${user.password}`).toString('base64')}` },
      });
      if (res.status !== 200) throw new Error(`${path}: ${res.status}`);
      return Buffer.from(await res.arrayBuffer());
    };
    const invoiceId = changed.body.payment.invoice_id;
    toPng(await pdf(`/invoices/${invoiceId}/pdf/`), PAGE_PNG, 100);
    const note = (await server.api('GET', `/credit-notes/?invoice_id=${invoiceId}`, { auth: user })).body.results[0];
    toPng(await pdf(`/credit-notes/${note.id}/pdf/`), CREDIT_NOTE_PNG, 100);
    process.stdout.write(`Wrote ${PAGE_PNG}, ${CREDIT_NOTE_PNG} and ${LOGO}\n`);
  } finally {
    await server.stop();
  }
}

await main();
