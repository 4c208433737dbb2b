import fc from 'fast-check';
import { afterAll, beforeAll } from 'vitest';
import { createTestDatabase, type DatabaseKind, type TestDatabase } from '../database.js';
import { prepareDatabase, type Account } from './accounts.js';
import { encodePathValue, ID_SPELLINGS, loadContract, pathVariants, requestArb, type Contract, type Operation, type RequestContext, type RequestFocus } from './contract.js';
import { API, call, callRawPath, readAnswer, startServerProcess, TEST_SERVER_KEY, type HttpAnswer, type ServerProcess } from './server-process.js';
import type { StatusLog } from './status-log.js';

/*
 * Property-based requests for every operation of the contract against a server process, with a
 * real user (Basic) whose own resources, and another user's, exist, so that requests get past
 * authentication and lookups. Every answer is judged: no 5xx, documented status, valid body.
 */

export interface FuzzTarget {
  server: ServerProcess;
  /**
   * A second process on the same database as an operator runs it: the login throttle at its
   * default limit, SUBSCRIPTION_PROTECTED_PATHS set, and TRUST_PROXY so that each burst of
   * guesses speaks from an address of its own.
   */
  strict: ServerProcess;
  contract: Contract;
  context: RequestContext;
  accounts: Record<string, Account>;
}

/** Prefixes the strict process protects; `nosub` has no subscription, `other` an active one. */
export const PROTECTED_PREFIXES = [`${API}/invoices/`, `${API}/wallet/`];
export const STRICT_LOGIN_LIMIT = 5;
/** fuzzAll's focus on the classes of input of issue 16 (nesting depth, invalid text). */
export const ATTACKER_CLASSES: RequestFocus = 'attacker';

export interface FuzzFinding {
  operation: string;
  request: string;
  status: number;
  problems: string[];
}

export async function startFuzzTarget(databaseUrl: string, env: Record<string, string> = {}): Promise<FuzzTarget> {
  const accounts = await prepareDatabase(databaseUrl, ['fuzz', 'other', 'nosub', 'refunder', 'staffer'], { staff: ['staffer'] });
  const server = await startServerProcess({ databaseUrl, env: { LOGIN_THROTTLE_LIMIT: '100000000', ...env } });
  const strict = await startServerProcess({
    databaseUrl,
    env: { LOGIN_THROTTLE_LIMIT: String(STRICT_LOGIN_LIMIT), TRUST_PROXY: 'true', SUBSCRIPTION_PROTECTED_PATHS: PROTECTED_PREFIXES.join(',') },
  });
  const ids = { own: [] as string[], other: [] as string[] };
  const subscriptions = { own: [] as string[], other: [] as string[] };
  for (const who of ['fuzz', 'other'] as const) {
    const basic = accounts[who];
    const bucket = who === 'fuzz' ? 'own' : 'other';
    const paid = await call(server.url, 'POST', `${API}/subscriptions/`, { basic, body: { plan_id: 'pro-monthly', payment_type: 'credit_card', token: 'sim-card-accept-1' } });
    const topup = await call(server.url, 'POST', `${API}/topups/`, { basic, body: { amount: 100000, payment_type: 'bank_transfer' } });
    if (paid.status !== 201 || topup.status !== 201) throw new Error(`fixtures: ${paid.text} ${topup.text}`);
    // The card capture settles at the gateway (a day later at Midtrans); only then can it be refunded there.
    await call(server.url, 'POST', `/_simulator/v2/${paid.body.payment.order_id}/settle`);
    ids[bucket].push(paid.body.subscription.id, paid.body.payment.id, paid.body.payment.invoice_id, topup.body.id);
    subscriptions[bucket].push(paid.body.subscription.id);
    const notes = await call(server.url, 'GET', `${API}/notifications/`, { basic });
    ids[bucket].push(...notes.body.results.map((n: { id: string }) => n.id));
  }
  const plans = await call(server.url, 'GET', `${API}/plans/`);
  const slugs: string[] = plans.body.results.map((p: { slug: string }) => p.slug);
  const orders = await call(server.url, 'GET', `${API}/payments/`, { basic: accounts.fuzz });
  // A coupon, a promotion code and a billable metric, so that staff routes naming one get past the look-up.
  const coupon = await call(server.url, 'POST', `${API}/admin/coupons/`, { basic: accounts.staffer, body: { code: 'FUZZ25', name: 'Fuzz', percent_off: '25', duration: 'once', reason: 'fuzz fixture' } });
  const promo = await call(server.url, 'POST', `${API}/admin/promotion-codes/`, { basic: accounts.staffer, body: { code: 'fuzz25', coupon: 'FUZZ25', reason: 'fuzz fixture' } });
  const metric = await call(server.url, 'POST', `${API}/admin/metrics/`, { basic: accounts.staffer, body: { code: 'fuzz_calls', name: 'Fuzz calls', aggregation: 'count', reason: 'fuzz fixture' } });
  if (coupon.status !== 201 || promo.status !== 201 || metric.status !== 201) throw new Error(`fixtures: ${coupon.text} ${promo.text} ${metric.text}`);
  const context: RequestContext = {
    credentials: accounts.fuzz,
    staffCredentials: accounts.staffer,
    serverKey: TEST_SERVER_KEY,
    pathValues: { id: [...ids.own, ...ids.other], slug: [...slugs, 'legacy', 'no-such-plan'], user: ['fuzz', 'other', accounts.fuzz.id, 'nobody-at-all'], customer: ['fuzz', 'other', accounts.fuzz.id, 'ext:nobody-at-all', 'nobody-at-all'],
      coupon: ['FUZZ25', coupon.body.id, 'NO-SUCH-COUPON'], code: ['fuzz25', 'FUZZ25', promo.body.id, 'no-such-code'], metric: ['fuzz_calls', metric.body.id, 'no_such_metric'] },
    bodyHints: {
      plan_id: fc.constantFrom(...slugs, plans.body.results[0].id, 'legacy', 'usd-monthly'),
      subscription_id: fc.constantFrom(...subscriptions.own, ...subscriptions.other),
      token: fc.constantFrom('sim-card-accept-7', 'sim-card-challenge', 'sim-card-deny', 'tok-3ds-wait'),
      username: fc.constantFrom('fuzz', 'other', 'nobody', "admin'--"),
      password: fc.constantFrom(accounts.fuzz.password, 'wrong password', ''),
      coupon: fc.constantFrom('FUZZ25', coupon.body.id, 'NO-SUCH-COUPON'),
      plans: fc.constantFrom(['basic-monthly'], ['pro-monthly', 'basic-monthly'], ['no-such-plan']),
    },
    orderIds: orders.body.results.map((p: { order_id: string }) => p.order_id),
  };
  return { server, strict, contract: loadContract(), context, accounts };
}

/**
 * A fuzz target on a fresh database for the enclosing describe block (the object is filled before
 * its first test); both processes stopped and the database dropped after the block.
 */
export function fuzzTargetForBlock(kind: DatabaseKind): FuzzTarget {
  const target = {} as FuzzTarget;
  let db: TestDatabase | undefined;
  beforeAll(async () => {
    db = await createTestDatabase(kind);
    Object.assign(target, await startFuzzTarget(db.url));
  }, 300_000);
  afterAll(async () => {
    await target.server?.stop();
    await target.strict?.stop();
    await db?.drop();
  });
  return target;
}

/** Sends `runs` generated requests to one operation and returns what broke the rules (each answer goes to `log` too). */
export async function fuzzOperation(target: FuzzTarget, op: Operation, runs: number, seed: number, focus: RequestFocus = 'all', log?: StatusLog): Promise<FuzzFinding[]> {
  const findings: FuzzFinding[] = [];
  const statuses: Record<number, number> = {};
  const requests = fc.sample(requestArb(target.contract, op, target.context, focus), { numRuns: runs, seed });
  for (const req of requests) {
    const res = await fetch(`${target.server.url}${op.base ?? API}${req.url}`, { method: req.method, headers: req.headers, body: req.body, redirect: 'manual' });
    const { text, contentType, body, malformedJson } = await readAnswer(res);
    statuses[res.status] = (statuses[res.status] ?? 0) + 1;
    if (malformedJson) {
      findings.push({ operation: op.id, request: describe(req), status: res.status, problems: ['the body is not the JSON its content type says'] });
      continue;
    }
    const problems = log ? [...log.record(op, describe(req), res.status, contentType, body).problems] : target.contract.check(op, res.status, contentType, body);
    // NOTE: a correctly signed notification the service cannot apply (unknown order, wrong
    // amount) is documented as 503 so that the gateway retries; an attacker cannot sign.
    const allowed5xx = op.id === 'receiveGatewayNotification' && req.signed && res.status === 503;
    if (res.status >= 500 && !allowed5xx) problems.unshift(`${res.status}: ${text.slice(0, 300)}`);
    if (problems.length > 0) findings.push({ operation: op.id, request: describe(req), status: res.status, problems });
  }
  if (process.env.RELIABILITY_VERBOSE) console.log(`${op.id}: ${JSON.stringify(statuses)}`);
  return findings;
}

function describe(req: { method: string; url: string; body?: string; auth: string; signed: boolean }): string {
  const body = req.body === undefined ? '' : ` ${req.body.length > 300 ? `${req.body.slice(0, 300)}… (${req.body.length} chars)` : req.body}`;
  return `${req.method} ${req.url.slice(0, 300)} [auth ${req.auth}${req.signed ? ', signed' : ''}]${body}`;
}

/** All operations, `parallel` at a time; findings grouped so each kind of failure shows once. */
export async function fuzzAll(
  target: FuzzTarget,
  runs: number,
  seed: number,
  parallel = 4,
  focus: RequestFocus = 'all',
): Promise<{ requests: number; findings: Record<string, FuzzFinding & { count: number }> }> {
  // The attacker's classes live in bodies: only operations that take one.
  const queue = target.contract.operations.filter((op) => focus === 'all' || op.body !== null);
  const grouped: Record<string, FuzzFinding & { count: number }> = {};
  const worker = async () => {
    for (let op = queue.shift(); op; op = queue.shift()) {
      const started = performance.now();
      const found = await fuzzOperation(target, op, runs, seed, focus);
      if (process.env.RELIABILITY_VERBOSE) console.log(`${op.id}: ${runs} requests in ${Math.round(performance.now() - started)} ms`);
      for (const f of found) {
        const key = `${f.operation} ${f.status} ${f.problems[0].replace(/[0-9a-f-]{36}/g, '…').slice(0, 120)}`;
        grouped[key] ??= { ...f, count: 0 };
        grouped[key].count += 1;
      }
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  return { requests: target.contract.operations.length * runs, findings: grouped };
}

// ---------------------------------------------------------------------------------------------
// Path variants: every spelling of a path gets the answer its canonical form gets

const answerOf = (res: HttpAnswer) => `${res.status} ${(res.body as { code?: string })?.code ?? ''}`;

/**
 * For generated GET requests of every operation, and for protected prefixes on the strict
 * process, sends the path as generated and as a variant (repeated slashes, dot segments,
 * percent-encoding…) and reports where the answers differ, or where a user without a
 * subscription gets past a protected prefix.
 */
export async function fuzzPathVariants(target: FuzzTarget, runs: number, seed: number): Promise<FuzzFinding[]> {
  const findings: FuzzFinding[] = [];
  const basic = (a: Account) => ({ authorization: `Basic ${Buffer.from(`${a.username}:${a.password}`).toString('base64')}` });
  for (const op of target.contract.operations.filter((o) => o.method === 'GET')) {
    const requests = fc.sample(requestArb(target.contract, op, target.context), { numRuns: runs, seed });
    const picks = fc.sample(fc.nat(), { numRuns: runs, seed: seed + 1 });
    for (const [i, req] of requests.entries()) {
      const [path, query] = req.url.split('?');
      const variants = pathVariants(`${API}${path}`);
      const variant = `${variants[picks[i] % variants.length]}${query ? `?${query}` : ''}`;
      const canonical = await callPaced(target.server.url, 'GET', `${API}${req.url}`, { headers: req.headers });
      const other = await callPaced(target.server.url, 'GET', variant, { headers: req.headers });
      if (answerOf(canonical) !== answerOf(other)) {
        findings.push({ operation: op.id, request: `GET ${variant} [auth ${req.auth}]`, status: other.status, problems: [`answers ${answerOf(other)}, but ${answerOf(canonical)} as GET ${API}${req.url}`] });
      }
    }
    // Protected prefixes, on the strict process: the same answer for every spelling, and never a
    // 2xx for a user without a subscription.
    const protectedPath = `${API}${op.path.replace(/\{(\w+)\}/g, () => target.context.pathValues.id[0])}`;
    if (!PROTECTED_PREFIXES.some((p) => protectedPath.startsWith(p))) continue;
    for (const who of ['nosub', 'other'] as const) {
      const headers = { ...basic(target.accounts[who]), 'x-forwarded-for': '192.0.2.1' };
      const canonical = await callPaced(target.strict.url, 'GET', protectedPath, { headers });
      for (const variant of [...pathVariants(protectedPath), protectedPath.toUpperCase(), protectedPath.replace('/api/', '/API/')]) {
        const res = await callPaced(target.strict.url, 'GET', variant, { headers });
        const caseOnly = variant.toLowerCase() === protectedPath.toLowerCase() && variant !== protectedPath;
        // Another case of letters is a 404 for the (case-sensitive) router: only never a 2xx.
        const wrong = caseOnly ? who === 'nosub' && res.status < 300 : answerOf(res) !== answerOf(canonical) || (who === 'nosub' && res.status !== 403);
        if (wrong) findings.push({ operation: op.id, request: `GET ${variant} [${who}, protected]`, status: res.status, problems: [`answers ${answerOf(res)}, but ${answerOf(canonical)} as GET ${protectedPath}`] });
      }
    }
  }
  return findings;
}

/**
 * One raw call that waits out a documented rate limit (429 rate_limited, e.g. a user's PDF
 * requests a second) and asks again: the pace of the fuzzer is not a finding, the answer is.
 */
async function callPaced(...args: Parameters<typeof callRawPath>): ReturnType<typeof callRawPath> {
  for (let attempt = 0; ; attempt++) {
    const res = await callRawPath(...args);
    if (res.status !== 429 || (res.body as { code?: string } | null)?.code !== 'rate_limited' || attempt >= 5) return res;
    await new Promise((resolve) => setTimeout(resolve, 1000 * Number(res.headers.get('retry-after') ?? 1)));
  }
}

/**
 * Every `{id}` route with a real id (the user's own and another user's) in each spelling that is
 * no canonical UUID (issue 28 row 2): each must answer a documented 404, never a 5xx.
 */
export async function fuzzIdSpellings(target: FuzzTarget): Promise<FuzzFinding[]> {
  const findings: FuzzFinding[] = [];
  const headersFor = (op: Operation) => {
    const who = op.staff && target.context.staffCredentials ? target.context.staffCredentials : target.context.credentials;
    return { authorization: `Basic ${Buffer.from(`${who.username}:${who.password}`).toString('base64')}`, 'content-type': 'application/json' };
  };
  const ids = [...new Set(target.context.pathValues.id)];
  for (const op of target.contract.operations.filter((o) => o.base === null && o.params.some((p) => p.in === 'path' && p.name === 'id'))) {
    const headers = headersFor(op);
    for (const id of ids) {
      for (const [what, spell] of ID_SPELLINGS) {
        const url = `${API}${op.path.replace('{id}', encodePathValue(spell(id)))}`;
        const res = await callRawPath(target.server.url, op.method, url, { headers, rawBody: op.method === 'GET' ? undefined : '{}' });
        const problems = target.contract.check(op, res.status, res.headers.get('content-type'), res.body);
        if (res.status !== 404) problems.unshift(`answers ${answerOf(res)} to an id with ${what}, not 404`);
        if (problems.length > 0) findings.push({ operation: op.id, request: `${op.method} ${url.slice(0, 200)}`, status: res.status, problems });
      }
    }
  }
  return findings;
}

// ---------------------------------------------------------------------------------------------
// Concurrency: the same request N times at once

/**
 * Fires the same request `n` times at once, for `bursts` bursts of each kind, and reports broken
 * invariants: guesses at one username past the throttle (session login and Basic, on the strict
 * process), more than one effect for one Idempotency-Key, refunds of one payment adding up to
 * more than was paid or than the payment records; never a 5xx.
 */
export async function fuzzConcurrency(target: FuzzTarget, bursts: number, seed: number, n = 20): Promise<FuzzFinding[]> {
  const findings: FuzzFinding[] = [];
  const found = (operation: string, request: string, status: number, problem: string) => findings.push({ operation, request, status, problems: [problem] });
  const fiveHundreds = (operation: string, request: string, answers: HttpAnswer[]) => {
    for (const a of answers) if (a.status >= 500) found(operation, request, a.status, `${a.status}: ${a.text.slice(0, 200)}`);
  };
  const tally = (answers: HttpAnswer[]) => answers.reduce<Record<number, number>>((t, a) => ({ ...t, [a.status]: (t[a.status] ?? 0) + 1 }), {});
  const { fuzz, refunder } = target.accounts;
  const strict = target.strict.url;

  for (let b = 0; b < bursts; b++) {
    const tag = `${seed}-${b}`;
    // Guesses at one username, each with its own password, from one address per burst.
    const ip = (k: number) => ({ 'x-forwarded-for': `198.51.${(seed + b) % 250}.${k}` });
    const logins = await Promise.all(
      Array.from({ length: n }, (_, i) => call(strict, 'POST', `${API}/auth/login/`, { headers: ip(1), body: { username: `burst-${tag}`, password: `guess-${i}` } })),
    );
    fiveHundreds('login', `POST /auth/login/ ×${n}`, logins);
    if ((tally(logins)[401] ?? 0) > STRICT_LOGIN_LIMIT) found('login', `POST /auth/login/ ×${n} for burst-${tag}`, 401, `${JSON.stringify(tally(logins))}: more than ${STRICT_LOGIN_LIMIT} guesses checked`);

    const basics = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        call(strict, 'GET', `${API}/auth/me/`, { headers: { ...ip(2), authorization: `Basic ${Buffer.from(`basic-${tag}:guess-${i}`).toString('base64')}` } }),
      ),
    );
    fiveHundreds('getCurrentUser', `GET /auth/me/ ×${n}`, basics);
    if ((tally(basics)[401] ?? 0) > STRICT_LOGIN_LIMIT) found('getCurrentUser', `GET /auth/me/ ×${n} Basic basic-${tag}`, 401, `${JSON.stringify(tally(basics))}: more than ${STRICT_LOGIN_LIMIT} guesses checked`);

    // One Idempotency-Key, the same body, N times at once: one top-up, one answer.
    const before = (await call(target.server.url, 'GET', `${API}/topups/?page_size=1`, { basic: fuzz })).body.count as number;
    const key = `burst-${tag}`;
    const topups = await Promise.all(
      Array.from({ length: n }, () => call(target.server.url, 'POST', `${API}/topups/`, { basic: fuzz, headers: { 'idempotency-key': key }, body: { amount: 10000 + b, payment_type: 'qris' } })),
    );
    fiveHundreds('createTopup', `POST /topups/ ×${n} Idempotency-Key ${key}`, topups);
    const after = (await call(target.server.url, 'GET', `${API}/topups/?page_size=1`, { basic: fuzz })).body.count as number;
    const created = new Set(topups.filter((t) => t.status === 201).map((t) => t.body.id));
    if (after - before > 1 || created.size > 1) found('createTopup', `POST /topups/ ×${n} Idempotency-Key ${key}`, 201, `${after - before} top-ups made, ${created.size} ids answered`);
    for (const t of topups) if (![201, 409].includes(t.status)) found('createTopup', `POST /topups/ ×${n} Idempotency-Key ${key}`, t.status, `${t.status}: ${t.text.slice(0, 200)}`);

    // Refunds of one settled payment, N at once: never more than was paid, and what the
    // answers granted is what the payment records.
    const subscribe = () => call(target.server.url, 'POST', `${API}/subscriptions/`, { basic: refunder, body: { plan_id: 'basic-monthly', payment_type: 'credit_card', token: `sim-card-accept-${tag}` } });
    let paid = await subscribe();
    if (paid.status === 409) {
      // The last burst's refunds left its subscription live (none granted): end it first.
      for (const sub of (await call(target.server.url, 'GET', `${API}/subscriptions/`, { basic: refunder })).body.results) {
        await call(target.server.url, 'POST', `${API}/subscriptions/${sub.id}/cancel/`, { basic: refunder, body: { immediate: true } });
      }
      paid = await subscribe();
    }
    if (paid.status !== 201) {
      found('createSubscription', 'POST /subscriptions/ (refund burst fixture)', paid.status, paid.text.slice(0, 200));
      continue;
    }
    await call(target.server.url, 'POST', `/_simulator/v2/${paid.body.payment.order_id}/settle`);
    const paymentId = paid.body.payment.id as string;
    const refunds = await Promise.all(
      Array.from({ length: n }, (_, i) => call(target.server.url, 'POST', `${API}/payments/${paymentId}/refund/`, { basic: refunder, body: i % 2 ? { amount: 1000 } : {} })),
    );
    fiveHundreds('refundPayment', `POST /payments/{id}/refund/ ×${n}`, refunds);
    // A request that arrives while a refund is still pending at the gateway is answered with that
    // same refund (its refund_key, sent again at most): one grant, however many answers name it.
    const grants = new Map<string, number>(refunds.filter((r) => r.status === 200).map((r) => [r.body.refund.refund_key as string, Math.round(Number(r.body.refund.amount) * 100)]));
    const granted = [...grants.values()].reduce((sum, cents) => sum + cents, 0);
    const payment = (await call(target.server.url, 'GET', `${API}/payments/${paymentId}/`, { basic: refunder })).body;
    const recorded = Math.round(Number(payment.refunded_amount) * 100);
    const gross = Math.round(Number(payment.gross_amount) * 100);
    if (granted !== recorded || recorded > gross) {
      found('refundPayment', `POST /payments/${paymentId}/refund/ ×${n}`, 200, `answers granted ${granted / 100}, the payment records ${recorded / 100} of ${gross / 100}`);
    }
  }
  return findings;
}

/** Findings grouped so that each kind shows once (as fuzzAll groups them). */
export function groupFindings(found: FuzzFinding[]): Record<string, FuzzFinding & { count: number }> {
  const grouped: Record<string, FuzzFinding & { count: number }> = {};
  for (const f of found) {
    const key = `${f.operation} ${f.status} ${f.problems[0].replace(/[0-9a-f-]{36}/g, '…').replace(/\d+/g, 'N').slice(0, 120)}`;
    grouped[key] ??= { ...f, count: 0 };
    grouped[key].count += 1;
  }
  return grouped;
}
