import createClient from 'openapi-fetch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { paths } from '../../src/http/generated/openapi.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';

describe('a client generated from openapi.yaml', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer('sqlite');
    await server.seedPlans(STANDARD_PLANS);
  });
  afterAll(() => server?.stop());

  it('lists and reads plans, typed end to end', async () => {
    const client = createClient<paths>({ baseUrl: `${server.url}/api/subscriptions` });
    const list = await client.GET('/plans/', { params: { query: { interval_unit: 'month', ordering: '-price', page_size: 2 } } });
    expect(list.response.status).toBe(200);
    const page = list.data!;
    const first = page.results[0];
    // Typed fields: price is a money string, interval_unit an enum.
    const price: string = first.price;
    expect(price).toBe('150000.00');
    expect(page.next).toMatch(/page=2/);

    const one = await client.GET('/plans/{slug}/', { params: { path: { slug: first.slug } } });
    expect(one.data?.name).toBe(first.name);

    const missing = await client.GET('/plans/{slug}/', { params: { path: { slug: 'absent' } } });
    expect(missing.response.status).toBe(404);
    expect(missing.error?.code).toBe('not_found');
  });
});
