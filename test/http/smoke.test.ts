import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from '../helpers/database.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';

describe.each(DATABASES)('smoke on %s', (kind) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(kind);
    await server.seedPlans(STANDARD_PLANS);
  });
  afterAll(() => server?.stop());

  it('lists plans', async () => {
    const res = await server.api('GET', '/plans/');
    expect(res.status).toBe(200);
    expect(res.body.count).toBe(5);
  });
});
