import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/domain/clock.js';
import { DATABASES } from '../helpers/database.js';
import { STANDARD_PLANS, startTestServer, type Credentials, type TestServer } from '../helpers/server.js';

describe.each(DATABASES)('plans on %s', (kind) => {
  let server: TestServer;
  let staff: Credentials;
  let customer: Credentials;

  beforeAll(async () => {
    server = await startTestServer(kind);
    await server.seedPlans(STANDARD_PLANS);
    staff = await server.createUser({ isStaff: true });
    customer = await server.createUser();
  });
  afterAll(() => server?.stop());

  const slugs = (body: { results: { slug: string }[] }) => body.results.map((p) => p.slug);

  it('lists active plans publicly, ordered by sort_order then price, in the list envelope', async () => {
    const res = await server.api('GET', '/plans/');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ count: 5, next: null, previous: null });
    expect(slugs(res.body)).toEqual(['basic-monthly', 'pro-monthly', 'pro-trial', 'weekly', 'usd-monthly']);
    expect(res.body.results[1]).toMatchObject({ price: '150000.00', currency: 'IDR', interval: 1, interval_unit: 'month', status: 'active', features: { projects: 50 } });
  });

  it('serves the path without its trailing slash too', async () => {
    const res = await server.api('GET', '/plans');
    expect(res.status).toBe(200);
    expect(res.body.count).toBe(5);
  });

  it('filters by interval_unit, currency and search over name and description', async () => {
    expect(slugs((await server.api('GET', '/plans/?interval_unit=week')).body)).toEqual(['weekly']);
    expect(slugs((await server.api('GET', '/plans/?currency=USD')).body)).toEqual(['usd-monthly']);
    expect(slugs((await server.api('GET', '/plans/?search=teams')).body)).toEqual(['pro-monthly']);
    expect(slugs((await server.api('GET', '/plans/?search=PRO')).body)).toEqual(['pro-monthly', 'pro-trial']);
    expect((await server.api('GET', '/plans/?search=100%25')).body.count).toBe(0);
  });

  it('orders by price, sort_order and created_at in both directions', async () => {
    const byPrice = slugs((await server.api('GET', '/plans/?ordering=price&currency=IDR')).body);
    expect(byPrice.slice(0, 2)).toEqual(['weekly', 'basic-monthly']);
    expect(byPrice.slice(2).sort()).toEqual(['pro-monthly', 'pro-trial']);
    const byPriceDesc = slugs((await server.api('GET', '/plans/?ordering=-price&currency=IDR')).body);
    expect(byPriceDesc.slice(0, 2).sort()).toEqual(['pro-monthly', 'pro-trial']);
    expect(byPriceDesc.at(-1)).toBe('weekly');
    expect(slugs((await server.api('GET', '/plans/?ordering=-sort_order')).body)[0]).toBe('usd-monthly');
    expect((await server.api('GET', '/plans/?ordering=created_at')).status).toBe(200);
  });

  it('paginates with next and previous links, and a page past the end is empty', async () => {
    const first = await server.api('GET', '/plans/?page_size=2');
    expect(first.body.results).toHaveLength(2);
    expect(first.body.previous).toBeNull();
    expect(first.body.next).toMatch(/page=2/);
    const second = await fetch(first.body.next).then((r) => r.json());
    expect(second.results).toHaveLength(2);
    expect(second.previous).toMatch(/page=1/);
    const past = await server.api('GET', '/plans/?page=9&page_size=2');
    expect(past.status).toBe(200);
    expect(past.body).toMatchObject({ count: 5, results: [], next: null });
  });

  it('shows inactive plans only to staff', async () => {
    expect((await server.api('GET', '/plans/?status=inactive')).body.count).toBe(0);
    expect((await server.api('GET', '/plans/?status=inactive', { auth: customer })).body.count).toBe(0);
    const forStaff = await server.api('GET', '/plans/?status=inactive', { auth: staff });
    expect(slugs(forStaff.body)).toEqual(['legacy']);
    expect((await server.api('GET', '/plans/', { auth: staff })).body.count).toBe(6);
  });

  it('reads one plan by slug; inactive and unknown plans are 404 for the public', async () => {
    const res = await server.api('GET', '/plans/pro-monthly/');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ slug: 'pro-monthly', name: 'Pro', price: '150000.00' });
    expect((await server.api('GET', '/plans/legacy/')).status).toBe(404);
    expect((await server.api('GET', '/plans/legacy/', { auth: staff })).status).toBe(200);
    const missing = await server.api('GET', '/plans/no-such-plan/');
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(missing.body).toMatchObject({ status: 404, code: 'not_found' });
  });

  it.each([
    ['/plans/?status=deleted', 'status'],
    ['/plans/?interval_unit=year', 'interval_unit'],
    ['/plans/?ordering=name', 'ordering'],
    ['/plans/?page=0', 'page'],
    ['/plans/?page=-1', 'page'],
    ['/plans/?page=abc', 'page'],
    ['/plans/?page_size=101', 'page_size'],
    ['/plans/?currency=rupiah', 'currency'],
    [`/plans/?search=${'x'.repeat(300)}`, 'search'],
  ])('answers 400 problem+json naming the field for %s', async (path, field) => {
    const res = await server.api('GET', path);
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(res.body.code).toBe('validation_error');
    expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
  });
});

describe.each(DATABASES)('plan slugs on %s', (kind) => {
  it('a path slug that breaks the slug pattern names no plan: 404, as an unknown slug', async () => {
    const server = await startTestServer(kind);
    try {
      const res = await server.api('GET', '/plans/UPPER_CASE!/');
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
      expect(res.body.code).toBe('not_found');
    } finally {
      await server.stop();
    }
  });
});

describe.each(DATABASES)('the plan catalogue cache on %s', (kind) => {
  it('answers with an ETag, 304 to If-None-Match, and a new answer once a plan changes', async () => {
    const server = await startTestServer(kind);
    try {
      await server.seedPlans(STANDARD_PLANS);
      const first = await server.api('GET', '/plans/');
      const etag = first.headers.get('etag')!;
      expect(etag).toMatch(/^"[\w-]{27}"$/);
      expect(first.headers.get('cache-control')).toBe('no-cache');

      const again = await server.api('GET', '/plans/', { headers: { 'if-none-match': etag } });
      expect(again.status).toBe(304);
      expect(again.text).toBe('');
      expect(again.headers.get('etag')).toBe(etag);
      expect((await server.api('GET', '/plans/', { headers: { 'if-none-match': `"other", W/${etag}` } })).status).toBe(304);
      // Another page is another answer with its own tag.
      const page = await server.api('GET', '/plans/?page_size=2', { headers: { 'if-none-match': etag } });
      expect(page.status).toBe(200);
      expect(page.headers.get('etag')).not.toBe(etag);

      await server.seedPlans([{ ...STANDARD_PLANS[0], price: 55000 }]);
      const changed = await server.api('GET', '/plans/', { headers: { 'if-none-match': etag } });
      expect(changed.status).toBe(200);
      expect(changed.headers.get('etag')).not.toBe(etag);
      expect(changed.body.results[0]).toMatchObject({ slug: 'basic-monthly', price: '55000.00' });

      const plan = await server.api('GET', '/plans/basic-monthly/');
      expect(plan.body.price).toBe('55000.00');
      expect((await server.api('GET', '/plans/basic-monthly/', { headers: { 'if-none-match': plan.headers.get('etag')! } })).status).toBe(304);
    } finally {
      await server.stop();
    }
  });

  it('staff and the public get their own answers from the same cache', async () => {
    const server = await startTestServer(kind);
    try {
      await server.seedPlans(STANDARD_PLANS);
      const staff = await server.createUser({ isStaff: true });
      expect((await server.api('GET', '/plans/')).body.count).toBe(5);
      expect((await server.api('GET', '/plans/', { auth: staff })).body.count).toBe(6);
      expect((await server.api('GET', '/plans/')).body.count).toBe(5);
      expect((await server.api('GET', '/plans/legacy/')).status).toBe(404);
      expect((await server.api('GET', '/plans/legacy/', { auth: staff })).status).toBe(200);
    } finally {
      await server.stop();
    }
  });

  it('with PLAN_CACHE_SECONDS, a change made elsewhere shows once the window has passed', async () => {
    const clock = new ManualClock(new Date('2026-11-22T10:00:00Z'));
    const server = await startTestServer(kind, { clock, config: { planCacheSeconds: 30 } });
    try {
      await server.seedPlans(STANDARD_PLANS);
      expect((await server.api('GET', '/plans/basic-monthly/')).body.price).toBe('50000.00');
      await server.seedPlans([{ ...STANDARD_PLANS[0], price: 60000 }]);
      clock.advance(29_000);
      expect((await server.api('GET', '/plans/basic-monthly/')).body.price).toBe('50000.00');
      clock.advance(1_000);
      expect((await server.api('GET', '/plans/basic-monthly/')).body.price).toBe('60000.00');
    } finally {
      await server.stop();
    }
  });
});
