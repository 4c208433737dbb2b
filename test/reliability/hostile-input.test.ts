import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from '../helpers/database.js';
import { ATTACKER_CLASSES, fuzzAll, fuzzConcurrency, fuzzIdSpellings, fuzzPathVariants, groupFindings, fuzzTargetForBlock } from '../helpers/reliability/fuzz.js';
import { STANDARD_PLANS, startTestServer, type Credentials, type TestServer } from '../helpers/server.js';

const SEED = Number(process.env.RELIABILITY_SEED ?? 20260119);
const RUNS = Number(process.env.RELIABILITY_RUNS ?? 200);
const CLASS_RUNS = Number(process.env.RELIABILITY_CLASS_RUNS ?? 40);
const VARIANT_RUNS = Number(process.env.RELIABILITY_VARIANT_RUNS ?? 8);
const BURSTS = Number(process.env.RELIABILITY_BURSTS ?? 2);

// SQLite only here (npm test's share); test/reliability/long/ runs more on both databases.
describe('hostile input on every operation of openapi.yaml (sqlite)', () => {
  const target = fuzzTargetForBlock('sqlite');

  it(`${RUNS} generated requests per operation: no 5xx, every status documented, every body valid (seed ${SEED})`, async () => {
    expect(target.contract.operations.length).toBeGreaterThanOrEqual(31);
    const { findings } = await fuzzAll(target, RUNS, SEED);
    expect(findings).toEqual({});
    expect(target.server.child.exitCode).toBeNull();
  }, 600_000);
});

// The classes an attacker used against a running server (issue 16), on both databases: nesting
// depth and invalid text in bodies, every path in other spellings (and the protected prefixes of
// a second process), and the same request N times at once.
describe.each(DATABASES)('hostile input, the attacker\'s classes (%s)', (kind) => {
  const target = fuzzTargetForBlock(kind);

  it(`deep and invalid-text bodies on every operation: no 5xx, documented answers (seed ${SEED})`, async () => {
    const { findings } = await fuzzAll(target, CLASS_RUNS, SEED, 4, ATTACKER_CLASSES);
    expect(findings).toEqual({});
  }, 600_000);

  it(`path variants of every GET route and of the protected prefixes answer as the path itself (seed ${SEED})`, async () => {
    expect(groupFindings(await fuzzPathVariants(target, VARIANT_RUNS, SEED))).toEqual({});
  }, 600_000);

  it('ids in other spellings (urn:uuid:, braces, whitespace, overlong…) on every {id} route: a documented 404, never a 5xx', async () => {
    expect(groupFindings(await fuzzIdSpellings(target))).toEqual({});
  }, 600_000);

  it(`the same request N times at once: logins, Basic, one Idempotency-Key, refunds of one payment (seed ${SEED})`, async () => {
    expect(groupFindings(await fuzzConcurrency(target, BURSTS, SEED))).toEqual({});
    expect(target.server.child.exitCode).toBeNull();
    expect(target.strict.child.exitCode).toBeNull();
  }, 600_000);
});

// Found by the generator (seeds 1, 2 and 3), pinned here on both databases.
describe.each(DATABASES)('input the generator found breaking the server (%s)', (kind) => {
  let server: TestServer;
  let alice: Credentials;
  beforeAll(async () => {
    server = await startTestServer(kind);
    await server.seedPlans(STANDARD_PLANS);
    alice = await server.createUser();
  });
  afterAll(() => server?.stop());

  it.each([
    ['GET', '/plans/?search=a%00b', undefined, 'search'],
    ['GET', '/invoices/?ordering=%00', undefined, 'ordering'],
    ['POST', '/subscriptions/', { plan_id: '\u0000', payment_type: 'gopay' }, 'plan_id'],
    ['POST', '/subscriptions/', { plan_id: 'basic-monthly', payment_type: 'gopay', metadata: { note: 'a\u0000b' } }, 'metadata.note'],
    ['POST', '/subscriptions/', { plan_id: 'basic-monthly', payment_type: 'gopay', metadata: { 'k\u0000': 1 } }, 'metadata.k\u0000'],
    ['POST', '/auth/login/', { username: 'x\u0000', password: 'y' }, 'username'],
  ])('NUL characters: %s %s answers 400 naming the field', async (method, path, body, field) => {
    const res = await server.api(method, path, { auth: alice, body });
    expect(res.status, res.text).toBe(400);
    expect(res.body.code).toBe('validation_error');
    expect(res.body.errors).toContainEqual({ field, message: 'must not contain NUL characters' });
  });

  // Found by the invalid-UTF-16 class (issue 16): the router's decoding of path parameters threw.
  it.each([
    ['GET', '/subscriptions/%ED%A0%80/'],
    ['POST', '/subscriptions/%ED%A0%80/cancel/'],
    ['POST', '/payments/%ED%A1%92%ED%B0%98/refund/'],
    ['GET', '/plans/%C0%AF/'],
  ])('percent-encoding that is no UTF-8 in a path: %s %s answers 404', async (method, path) => {
    const res = await server.api(method, path, { auth: alice, body: method === 'POST' ? { immediate: true } : undefined });
    expect(res.status, res.text).toBe(404);
    expect(res.body.code).toBe('not_found');
  });

  it.each(['/plans/', '/invoices/', '/payments/', '/notifications/'])('a page past 2^53 answers 200 with no results: %s', async (path) => {
    const res = await server.api('GET', `${path}?page=100000000000000000000&page_size=100`, { auth: alice });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ results: [], next: null });
  });
});
