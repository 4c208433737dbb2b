import { join } from 'node:path';
import { Eta } from 'eta';
import type { Context } from 'koa';
import { PROJECT_ROOT } from '../../project-root.js';
import type { Language, Translate } from './language.js';

/** The templates of the hosted pages (hosted/templates/*.eta), escaped by default. */
const eta = new Eta({ views: join(PROJECT_ROOT, 'hosted/templates'), autoEscape: true, cache: true, autoTrim: false });

export interface PageFrame {
  lang: Language;
  t: Translate;
  company: string;
  title: string;
  /** The same page in the other language. */
  switchUrl: string | null;
  scripts?: string[];
  clientKey?: string;
  gatewayEnvironment?: string;
}

/**
 * Answers an HTML page. Pages are private to one browser and hold payment codes: never cached,
 * never framed, no referrer (the link's secret is in the path), and scripts and images only
 * from here and the gateway (`gatewayOrigin`: Midtrans's script, QR images and 3-D Secure page).
 */
export function sendPage(ctx: Context, template: string, data: PageFrame & Record<string, unknown>, status = 200, gatewayOrigin: string | null = null): void {
  const extra = gatewayOrigin ? ` ${gatewayOrigin}` : '';
  // 3-D Secure starts at the gateway and goes on to the card issuer's own page, on any bank's
  // host: with a real gateway, frames may load any https: page (the simulator's is this server).
  const frames = gatewayOrigin ? `${extra} https:` : '';
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.set({
    'Cache-Control': 'no-store',
    'Referrer-Policy': 'no-referrer',
    'X-Content-Type-Options': 'nosniff',
    'X-Frame-Options': 'DENY',
    'Content-Security-Policy': `default-src 'self'; script-src 'self'${extra}; connect-src 'self'${extra}; img-src 'self' data:${extra}; frame-src 'self'${frames}; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
    'Content-Language': data.lang,
  });
  ctx.body = eta.render(template, data);
}
