import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import type { DatabaseKind } from './database.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from './server.js';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** CI installs Chromium and sets REQUIRE_CHROMIUM, so there the browser tests cannot be skipped. */
export const canRunChromium = existsSync(CHROMIUM) || process.env.REQUIRE_CHROMIUM === '1';

/** The system's Chromium, headless, with nothing that would reach the network by itself. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

const require = createRequire(import.meta.url);
const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: string[];
}

/**
 * axe-core's WCAG 2 A and AA rules on the page as it stands. Evaluated through the DevTools
 * protocol, which the pages' Content-Security-Policy does not govern, so the pages keep theirs.
 * Returns the serious and critical violations.
 */
export async function seriousAxeViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run: (ctx: unknown, opts: unknown) => Promise<{ violations: { id: string; impact: string | null; help: string; nodes: { target: string[] }[] }[] }> } }).axe;
    const result = await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(' ')) }));
  });
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

/**
 * The pictures of the hosted pages in docs/hosted.md are taken here, by the browser tests, when
 * UPDATE_SCREENSHOTS=1 (docs/screenshots/NAME.png); otherwise nothing is written.
 */
export async function screenshotForReadme(page: Page, name: string): Promise<void> {
  if (process.env.UPDATE_SCREENSHOTS !== '1') return;
  await page.screenshot({ path: new URL(`../../docs/screenshots/${name}.png`, import.meta.url).pathname, fullPage: true });
}

export type PageLanguage = 'id' | 'en';
/** The narrowest phone the hosted pages are held to. */
export const PHONE = { width: 360, height: 740 };

/** A browser of a customer who reads `lang` (its locale and Accept-Language), in its own context (cookies). */
export async function browse(browser: Browser, lang: PageLanguage, viewport = { width: 1024, height: 900 }): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ locale: lang === 'en' ? 'en-US' : 'id-ID', viewport, extraHTTPHeaders: { 'Accept-Language': lang === 'en' ? 'en-US,en;q=0.9' : 'id-ID,id;q=0.9' } });
  return { context, page: await context.newPage() };
}

/** A server with the standard plans and a Chromium, for one describe block of browser tests. */
export function serverWithBrowser(kind: DatabaseKind): { server: () => TestServer; browser: () => Browser } {
  let server: TestServer;
  let browser: Browser;
  beforeAll(async () => {
    server = await startTestServer(kind);
    await server.seedPlans(STANDARD_PLANS);
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });
  return { server: () => server, browser: () => browser };
}

/** The hosted card form filled with a good test card (4811 1111 1111 1114: 3-D Secure asked, then approved). */
export async function fillTestCard(page: Page): Promise<void> {
  await page.check('#pt-credit_card');
  await page.fill('#card-number', '4811 1111 1111 1114');
  await page.fill('#card-month', '12');
  await page.fill('#card-year', String(new Date().getUTCFullYear() + 3));
  await page.fill('#card-cvv', '123');
}
