import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import { PROJECT_ROOT } from '../../project-root.js';
import { checkoutStatus, chooseCheckout, showCheckout } from './checkout-page.js';
import { claimPortalPage, sendRefusal, type PageDeps } from './page-kit.js';
import { portalAction, portalDocument, showPortal } from './portal-page.js';
import { chooseInvoicePayment, invoicePageStatus, showInvoicePage } from './invoice-page.js';
import { INVOICE_TOKEN } from '../../services/hosted/invoice-links.js';

const ASSETS: Record<string, string> = {
  'hosted.css': 'text/css; charset=utf-8',
  'checkout.js': 'application/javascript; charset=utf-8',
  'portal.js': 'application/javascript; charset=utf-8',
};

/** A link's secret: 43 base64url characters; anything else names no page (404 before any query). */
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

/**
 * The hosted checkout (`/pay/TOKEN/`), open invoices' pages (`/pay/inv_…/`) and customer portal (`/portal/TOKEN/`), and their
 * stylesheet and scripts (`/hosted-assets/`), at the server's root. GET also answers HEAD,
 * and neither ever claims a link: a portal is claimed by its landing page's POST.
 */
export function hostedPages(deps: PageDeps): Middleware {
  const router = new Router();
  router.get('/hosted-assets/:file', async (ctx) => {
    const type = ASSETS[ctx.params.file!];
    if (!type) return;
    ctx.type = type;
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.body = await readFile(join(PROJECT_ROOT, 'hosted/assets', ctx.params.file!));
  });
  type PageContext = Context & { params: Record<string, string | undefined> };
  const page = (handle: (ctx: PageContext, deps: PageDeps, token: string) => Promise<void>) => async (ctx: PageContext) =>
    TOKEN.test(ctx.params.token ?? '') ? handle(ctx, deps, ctx.params.token!) : sendRefusal(ctx, deps, 'unknown');
  // `/pay/` holds checkouts (a stored link's secret) and open invoices' pages (INVOICE_TOKEN).
  type Handle = (ctx: PageContext, deps: PageDeps, token: string) => Promise<void>;
  const pay = (checkout: Handle, invoice: Handle) => async (ctx: PageContext) =>
    INVOICE_TOKEN.test(ctx.params.token ?? '') ? invoice(ctx, deps, ctx.params.token!) : page(checkout)(ctx);
  router.get('/pay/:token/', pay(showCheckout, showInvoicePage));
  router.post('/pay/:token/', pay(chooseCheckout, chooseInvoicePayment));
  router.get('/pay/:token/status', pay(checkoutStatus, invoicePageStatus));
  router.get('/portal/:token/', page(showPortal));
  router.post('/portal/:token/', page(claimPortalPage));
  router.post('/portal/:token/:action', page((ctx, d, token) => portalAction(ctx, d, token, String(ctx.params.action))));
  router.get('/portal/:token/:kind/:id/pdf', page((ctx, d, token) => {
    const kind = ctx.params.kind;
    if (kind !== 'invoices' && kind !== 'credit-notes') return Promise.resolve(sendRefusal(ctx, d, 'unknown'));
    return portalDocument(ctx, d, token, kind, String(ctx.params.id));
  }));
  const routes = router.routes();
  return (ctx, next) =>
    ctx.path.startsWith('/pay/') || ctx.path.startsWith('/portal/') || ctx.path.startsWith('/hosted-assets/') ? routes(ctx as never, next) : next();
}
