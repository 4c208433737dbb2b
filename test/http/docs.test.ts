import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { startTestServer, type TestServer } from '../helpers/server.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
// CI installs Chromium and sets REQUIRE_CHROMIUM, so there the test cannot be skipped.
const canRun = existsSync(CHROMIUM) || process.env.REQUIRE_CHROMIUM === '1';

describe('the published contract and its reference page', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer('sqlite');
  });
  afterAll(() => server?.stop());

  it('serves openapi.yaml', async () => {
    const res = await server.api('GET', '/openapi.yaml');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/yaml/);
    const doc = parse(res.text);
    expect(doc.openapi).toBe('3.0.3');
    expect(Object.keys(doc.paths)).toContain('/subscriptions/{id}/change-plan/');
  });

  it.runIf(canRun)('renders the API reference in headless Chromium, with no request leaving the machine', async () => {
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    try {
      const page = await browser.newPage();
      const foreign: string[] = [];
      page.on('request', (r) => {
        if (!r.url().startsWith(server.url) && !r.url().startsWith('data:')) foreign.push(r.url());
      });
      await page.goto(`${server.url}/api/subscriptions/docs/`);
      await page.waitForSelector('.opblock-summary-path', { timeout: 20_000 });
      const paths = await page.$$eval('.opblock-summary-path', (els) => els.map((e) => e.textContent?.replace(/\u200b/g, '') ?? ''));
      expect(paths).toContain('/plans/');
      expect(paths).toContain('/webhook/notification/');
      expect(await page.textContent('.title')).toMatch(/Billing Service API/);
      expect(foreign).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
