import fc from 'fast-check';
import { prepareDatabase } from './accounts.js';
import { loadContract, requestArb, type Contract, type Operation, type RequestContext } from './contract.js';
import { API, call, startServerProcess, TEST_SERVER_KEY, type ServerProcess } from './server-process.js';
import type { StatusLog } from './status-log.js';

/*
 * Property-based requests for every operation of the contract against a server process, with a
 * real user (Basic) whose own resources, and another user's, exist, so that requests get past
 * authentication and lookups. Every answer is judged: no 5xx, documented status, valid body.
 */

export interface FuzzTarget {
  server: ServerProcess;
  contract: Contract;
  context: RequestContext;
}

export interface FuzzFinding {
  operation: string;
  request: string;
  status: number;
  problems: string[];
}

export async function startFuzzTarget(databaseUrl: string, env: Record<string, string> = {}): Promise<FuzzTarget> {
  const accounts = await prepareDatabase(databaseUrl, ['fuzz', 'other']);
  const server = await startServerProcess({ databaseUrl, env: { LOGIN_THROTTLE_LIMIT: '100000000', ...env } });
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
  const context: RequestContext = {
    credentials: accounts.fuzz,
    serverKey: TEST_SERVER_KEY,
    pathValues: { id: [...ids.own, ...ids.other], slug: [...slugs, 'legacy', 'no-such-plan'] },
    bodyHints: {
      plan_id: fc.constantFrom(...slugs, plans.body.results[0].id, 'legacy', 'usd-monthly'),
      subscription_id: fc.constantFrom(...subscriptions.own, ...subscriptions.other),
      token: fc.constantFrom('sim-card-accept-7', 'sim-card-challenge', 'sim-card-deny', 'tok-3ds-wait'),
      username: fc.constantFrom('fuzz', 'other', 'nobody', "admin'--"),
      password: fc.constantFrom(accounts.fuzz.password, 'wrong password', ''),
    },
    orderIds: orders.body.results.map((p: { order_id: string }) => p.order_id),
  };
  return { server, contract: loadContract(), context };
}

/** Sends `runs` generated requests to one operation and returns what broke the rules (each answer goes to `log` too). */
export async function fuzzOperation(target: FuzzTarget, op: Operation, runs: number, seed: number, log?: StatusLog): Promise<FuzzFinding[]> {
  const findings: FuzzFinding[] = [];
  const statuses: Record<number, number> = {};
  const requests = fc.sample(requestArb(target.contract, op, target.context), { numRuns: runs, seed });
  for (const req of requests) {
    const res = await fetch(`${target.server.url}${op.base ?? API}${req.url}`, { method: req.method, headers: req.headers, body: req.body, redirect: 'manual' });
    const text = await res.text();
    statuses[res.status] = (statuses[res.status] ?? 0) + 1;
    const contentType = res.headers.get('content-type');
    let body: unknown = text;
    if (/json/.test(contentType ?? '') && text !== '') {
      try {
        body = JSON.parse(text);
      } catch {
        findings.push({ operation: op.id, request: describe(req), status: res.status, problems: ['the body is not the JSON its content type says'] });
        continue;
      }
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
export async function fuzzAll(target: FuzzTarget, runs: number, seed: number, parallel = 4): Promise<{ requests: number; findings: Record<string, FuzzFinding & { count: number }> }> {
  const queue = [...target.contract.operations];
  const grouped: Record<string, FuzzFinding & { count: number }> = {};
  const worker = async () => {
    for (let op = queue.shift(); op; op = queue.shift()) {
      const started = performance.now();
      const found = await fuzzOperation(target, op, runs, seed);
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
