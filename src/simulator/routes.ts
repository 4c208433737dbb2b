import Router from '@koa/router';
import type Koa from 'koa';
import type { CoreAnswer, SimulatorCore } from './core.js';
import { CARD_SCRIPT, tokenizeCard } from './card-tokens.js';
import { parseFault } from './faults.js';
import { parseHold, parseRelease } from './held-notifications.js';
import { isAuthorized, readJsonBody } from './http-util.js';
import { IdempotencyStore } from './idempotency.js';
import { qrSvg, threeDsDone, threeDsPage } from './pages.js';
import { errorBody } from './payload.js';
import { COMMAND_ACTIONS, SimulatorError, type CoreOperation, type FaultMode } from './types.js';

export const PREFIX = '/_simulator';
const DEFAULT_BODY_LIMIT = 1024 * 1024;
/** Commands whose JSON body may carry {"amount": N}. */
const AMOUNT_ACTIONS: readonly string[] = ['refund', 'chargeback', 'partial_chargeback'];
const CORE_ACTIONS: Partial<Record<string, CoreOperation>> = { cancel: 'cancel', expire: 'expire', refund: 'refund', approve: 'approve', deny: 'deny', capture: 'capture' };

type Handler = (ctx: Koa.Context, body: unknown) => CoreAnswer;

/** Requests held open by the timeout fault, released when their client goes away or on close(). */
export class HeldRequests {
  readonly #releases = new Set<() => void>();

  hold(ctx: Koa.Context): Promise<void> {
    ctx.respond = false;
    return new Promise((resolve) => {
      const release = (): void => {
        if (!this.#releases.delete(release)) return;
        ctx.req.socket.destroy();
        resolve();
      };
      this.#releases.add(release);
      ctx.res.once('close', release);
    });
  }

  releaseAll(): void {
    for (const release of [...this.#releases]) release();
  }
}

function isPermataCharge(body: unknown): boolean {
  const b = body as { payment_type?: unknown; bank_transfer?: { bank?: unknown } } | null;
  return b?.payment_type === 'permata' || (b?.payment_type === 'bank_transfer' && b.bank_transfer?.bank === 'permata');
}

/** What a faulty gateway (or a proxy in front of it) gives back instead of its answer. */
function answerWithFault(ctx: Koa.Context, mode: Exclude<FaultMode, 'none'>, held: HeldRequests, op: CoreOperation): Promise<void> | void {
  switch (mode) {
    case 'timeout':
      return held.hold(ctx);
    case 'http_500':
      return send(ctx, 500, errorBody('500', 'Sorry, Our system is recovering from unexpected issues. Please retry.'));
    case 'refuse':
      // Midtrans answers many business errors with HTTP 200 (docs/gateway.md, 'Wire details').
      // A refund is refused for the merchant's balance (414), anything else for the channel.
      if (op === 'refund' || op === 'direct_refund') return send(ctx, 200, errorBody('414', 'Merchant balance is insufficient for this refund'));
      return send(ctx, 200, errorBody('402', 'Payment channel is not activated.'));
    case 'malformed':
      ctx.status = 200;
      ctx.type = 'text/html';
      ctx.body = '<html><body>upstream answered garbage</body></html>';
      return;
    case 'redirect':
      // e.g. a captive portal or a misconfigured load balancer; Midtrans clients do not follow it.
      ctx.status = 302;
      ctx.set('Location', 'https://maintenance.example/');
      ctx.body = '';
      return;
  }
}

async function readRawBody(ctx: Koa.Context, limit: number): Promise<string | null> {
  if (ctx.req.readableEnded) {
    const parsed = (ctx.request as { body?: unknown }).body;
    return parsed === undefined ? '' : typeof parsed === 'string' ? parsed : JSON.stringify(parsed);
  }
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of ctx.req) {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
    size += buf.length;
    if (size > limit) return null;
    chunks.push(buf);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function threeDsResult(raw: string): 'authenticate' | 'fail' | null {
  let value: unknown = new URLSearchParams(raw).get('result');
  if (raw.trim().startsWith('{')) {
    try {
      value = (JSON.parse(raw) as { result?: unknown }).result;
    } catch {
      return null;
    }
  }
  return value === 'authenticate' || value === 'fail' ? value : null;
}

function send(ctx: Koa.Context, status: number, body: unknown): void {
  ctx.status = status;
  ctx.body = body;
}

export function buildMiddleware(core: SimulatorCore, held: HeldRequests): Koa.Middleware {
  const limit = core.opts.bodyLimitBytes ?? DEFAULT_BODY_LIMIT;
  const router = new Router({ prefix: PREFIX });

  /** Everything a Core API call goes through: request log, faults, auth, body, idempotency. */
  const coreApi =
    (op: CoreOperation, handler: Handler) =>
    async (ctx: Koa.Context): Promise<void> => {
      core.recordRequest({ operation: op, method: ctx.method, path: ctx.path, at: core.now() });
      const fault = core.faults.take(op);
      if ((fault.when === 'before' || fault.mode === 'refuse') && fault.mode !== 'none') return answerWithFault(ctx, fault.mode, held, op);
      if (!isAuthorized(ctx.get('authorization'), core.opts.serverKey)) {
        return send(ctx, 401, errorBody('401', 'Access denied due to unauthorized transaction, please check client or server key'));
      }
      let body: unknown = null;
      if (ctx.method !== 'GET') {
        const read = await readJsonBody(ctx, limit);
        if (!read.ok && read.reason === 'too_large') return send(ctx, 413, errorBody('413', 'Request body is too large'));
        if (!read.ok) return send(ctx, 400, errorBody('413', 'The request cannot be processed due to malformed syntax in the request body'));
        body = read.value;
      }
      // Midtrans does not support Idempotency-Key for Permata VA (docs/gateway.md, 'Wire details').
      const key = ctx.method === 'POST' && !(op === 'charge' && isPermataCharge(body)) ? IdempotencyStore.keyOf(ctx.get('idempotency-key')) : null;
      const replay = key === null ? null : core.idempotency.replay(key);
      if (replay) return send(ctx, replay.httpStatus, replay.body);
      const answer = handler(ctx, body);
      const code = String(answer.body['status_code'] ?? '');
      if (key !== null && answer.httpStatus === 200 && /^(20[0-2]|407)$/.test(code)) {
        core.idempotency.remember(key, { httpStatus: answer.httpStatus, body: answer.body });
      }
      if (answer.notify && fault.notify) core.notifyInBackground(answer.notify, answer.notifyDelayMs);
      // The gateway did the work; only its answer is lost on the way back.
      if (fault.when === 'after' && fault.mode !== 'none') return answerWithFault(ctx, fault.mode, held, op);
      send(ctx, answer.httpStatus, answer.body);
    };

  const id = (ctx: Koa.Context): string => String(ctx.params['id']);

  router.post(
    '/v2/charge',
    coreApi('charge', (ctx, body) =>
      core.charge(body, { override: ctx.get('x-override-notification') || undefined, append: ctx.get('x-append-notification') || undefined }),
    ),
  );
  router.get('/v2/:id/status', coreApi('status', (ctx) => core.status(id(ctx))));
  // Capturing a pre-authorisation: Midtrans's own path takes the transaction in the body.
  router.post('/v2/capture', coreApi('capture', (_ctx, body) => core.capture(body)));
  router.post('/v2/:id/refund/online/direct', coreApi('direct_refund', (ctx, body) => core.refund(id(ctx), body, true)));

  const coreActions: Record<CoreOperation, ReturnType<typeof coreApi> | undefined> = {
    cancel: coreApi('cancel', (ctx) => core.cancel(id(ctx))),
    expire: coreApi('expire', (ctx) => core.expire(id(ctx))),
    refund: coreApi('refund', (ctx, body) => core.refund(id(ctx), body, false)),
    approve: coreApi('approve', (ctx) => core.approve(id(ctx))),
    deny: coreApi('deny', (ctx) => core.deny(id(ctx))),
    // POST /v2/{id}/capture with Authorization: the same capture, the transaction named in the path.
    capture: coreApi('capture', (ctx, body) => core.capture({ ...(body as Record<string, unknown> | null), transaction_id: core.lookup(id(ctx))?.transaction_id ?? id(ctx) })),
    charge: undefined,
    status: undefined,
    direct_refund: undefined,
  };

  const command = async (ctx: Koa.Context, action: string): Promise<void> => {
    let amount: unknown;
    let reason: unknown;
    if (AMOUNT_ACTIONS.includes(action)) {
      const read = await readJsonBody(ctx, limit);
      if (!read.ok) return send(ctx, read.reason === 'too_large' ? 413 : 400, { error: 'body must be JSON, e.g. {"amount": 50000}' });
      amount = (read.value as { amount?: unknown } | null)?.amount;
      reason = (read.value as { reason?: unknown } | null)?.reason;
      if (reason !== undefined && (action === 'refund' || typeof reason !== 'string' || reason === '' || reason.length > 255)) {
        return send(ctx, 400, { error: 'reason is free text of 1 to 255 characters, on chargeback and partial_chargeback' });
      }
    }
    const fraud = ctx.query['fraud_status'];
    const fee = ctx.query['customer_fee'];
    if (fee !== undefined && (typeof fee !== 'string' || !/^[1-9]\d{0,11}$/.test(fee) || action !== 'settle')) {
      return send(ctx, 400, { error: 'customer_fee must be a positive whole amount, on settle' });
    }
    try {
      const result = await core.act(id(ctx), action, {
        notify: ctx.query['notify'] !== 'false',
        customerFee: fee === undefined ? undefined : Number(fee),
        fraudStatus: typeof fraud === 'string' ? (fraud as 'accept' | 'challenge') : undefined,
        amount: amount as number | string | undefined,
        reason: reason as string | undefined,
      });
      send(ctx, 200, result);
    } catch (e) {
      if (e instanceof SimulatorError) return send(ctx, e.httpStatus, { error: e.message });
      throw e;
    }
  };

  // The Core action paths and the development commands share /v2/:id/:action:
  // a request carrying Authorization is a Core API call, one without is a command.
  router.post('/v2/:id/:action', async (ctx) => {
    const action = String(ctx.params['action']);
    const coreOp = CORE_ACTIONS[action];
    const isCommand = (COMMAND_ACTIONS as readonly string[]).includes(action);
    if (coreOp && (ctx.get('authorization') !== '' || !isCommand)) return coreActions[coreOp]!(ctx);
    if (isCommand) return command(ctx, action);
    send(ctx, 404, { error: `unknown action ${action}` });
  });

  router.get('/v2/:kind/:id/qr-code', (ctx) => {
    const tx = core.store.find(id(ctx));
    if (!tx || (ctx.params['kind'] !== 'gopay' && ctx.params['kind'] !== 'qris')) return send(ctx, 404, { error: 'no such QR code' });
    ctx.type = 'image/svg+xml';
    ctx.body = qrSvg(tx);
  });

  // Card tokenization in the browser (the hosted checkout's card form): the script and its endpoint.
  router.get('/v2/assets/js/midtrans-new-3ds.min.js', (ctx) => {
    ctx.type = 'application/javascript; charset=utf-8';
    ctx.body = CARD_SCRIPT;
  });
  router.get('/v2/token', (ctx) => send(ctx, 200, tokenizeCard(ctx.query, core.now())));

  router.get('/3ds/:id', (ctx) => {
    const tx = core.store.find(id(ctx));
    if (!tx || tx.card === null) return send(ctx, 404, { error: 'no such card transaction' });
    ctx.type = 'text/html';
    ctx.body = threeDsPage(tx);
  });

  // The customer's answer on the 3-D Secure page: a form post (result=authenticate|fail) or JSON.
  router.post('/3ds/:id', async (ctx) => {
    const raw = await readRawBody(ctx, limit);
    if (raw === null) return send(ctx, 413, { error: 'body too large' });
    const result = threeDsResult(raw);
    if (result === null) return send(ctx, 400, { error: 'result must be authenticate or fail' });
    try {
      await core.authenticate(id(ctx), result === 'authenticate');
    } catch (e) {
      if (e instanceof SimulatorError) return send(ctx, e.httpStatus, { error: e.message });
      throw e;
    }
    ctx.type = 'text/html';
    ctx.body = threeDsDone(core.store.find(id(ctx))!);
  });

  // Time passing at the gateway: tick applies what is due on the simulator's clock now; next-day
  // runs the card settlement batch as if the next day had come.
  router.post('/tick', (ctx) => send(ctx, 200, { changed: core.tick() }));
  router.post('/next-day', (ctx) => send(ctx, 200, { changed: core.nextDay() }));

  router.get('/faults', (ctx) => send(ctx, 200, core.faults.describe()));
  router.post('/faults', async (ctx) => {
    const read = await readJsonBody(ctx, limit);
    const fault = read.ok ? parseFault(read.value) : 'body must be JSON';
    if (typeof fault === 'string') return send(ctx, 400, { error: fault });
    core.faults.set(fault);
    send(ctx, 200, core.faults.describe());
  });

  router.get('/transactions/:id', (ctx) => {
    const tx = core.lookup(id(ctx));
    if (!tx) return send(ctx, 404, { error: `no transaction for ${id(ctx)}` });
    send(ctx, 200, tx);
  });
  router.get('/requests', (ctx) => send(ctx, 200, core.requests));
  router.get('/notifications', (ctx) => send(ctx, 200, core.notifier.log));

  // The notification proxy (notifier.ts): hold what would be sent, then release it in any order.
  router.post('/notifications/hold', async (ctx) => {
    const read = await readJsonBody(ctx, limit);
    const hold = read.ok ? parseHold(read.value) : 'body must be JSON, e.g. {"order_id": "SUB-1"} or {}';
    if (typeof hold === 'string') return send(ctx, 400, { error: hold });
    core.notifier.hold(hold.orderId);
    send(ctx, 200, core.notifier.describeHolds());
  });
  router.get('/notifications/held', (ctx) => send(ctx, 200, { holding: core.notifier.describeHolds(), held: core.notifier.held() }));
  router.post('/notifications/release', async (ctx) => {
    const read = await readJsonBody(ctx, limit);
    const release = read.ok ? parseRelease(read.value) : 'body must be JSON, e.g. {"order": "newest_first"}';
    if (typeof release === 'string') return send(ctx, 400, { error: release });
    const result = await core.notifier.release(release);
    if (typeof result === 'string') return send(ctx, 409, { error: result });
    send(ctx, 200, { released: result });
  });
  router.post('/reset', (ctx) => {
    core.reset();
    send(ctx, 200, { ok: true });
  });

  const routes = router.routes();
  const allowedMethods = router.allowedMethods();
  return async (ctx, next) => {
    if (ctx.path !== PREFIX && !ctx.path.startsWith(`${PREFIX}/`)) return next();
    await routes(ctx as never, () => allowedMethods(ctx as never, async () => send(ctx, 404, { error: 'not found' })));
  };
}
