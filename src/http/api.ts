import { createHash } from 'node:crypto';
import { RequestContext } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';
import addFormatsModule from 'ajv-formats';
import type { Context as KoaContext, Middleware } from 'koa';
import { OpenAPIBackend, type Context as OpenApiContext, type Operation } from 'openapi-backend';
import type { ErrorObject } from 'ajv';
import type { Config } from '../config.js';
import type { Orm } from '../db/orm.js';
import type { Clock } from '../domain/clock.js';
import { DomainError, type FieldError } from '../domain/errors.js';
import type { PaymentGateway } from '../gateway/types.js';
import type { ServiceContext } from '../services/context.js';
import { parseJsonBody, readRawBytes, readWebhookBody } from './body.js';
import { isDecodablePath } from './canonical-path.js';
import { contractDefinition, OPENAPI_PATH } from './contract-document.js';
import { isUuid } from '../domain/ids.js';
import { canonicalPathParams } from './path-ids.js';
import { jsonNestsDeeperThan, MAX_JSON_DEPTH, unstorableField, unstorableReason } from './input-limits.js';
import { requestFingerprint, withIdempotency, type StoredResponse } from './idempotency.js';
import { requireUserId, type OperationHandlers, type OperationId, type OperationRequest } from './operations.js';
import { mayWrite } from './methods.js';
import { problem, sendProblem } from './problem.js';
import { BILLING_CUSTOMER_HEADER, sendNoSuchRoute, staffActor } from './auth/staff-gate.js';
import { recordAuditEvent } from '../services/audit/record-audit-event.js';

export const API_ROOT = '/api/subscriptions';
export { OPENAPI_PATH };

/** Operations that read their raw body themselves (the webhook logs whatever arrives). */
const RAW_BODY_OPERATIONS = new Set<OperationId>(['receiveGatewayNotification']);
export const WEBHOOK_PATH = `${API_ROOT}/webhook/notification/`;
const BODILESS_STATUSES = new Set([204, 304]);
/** The operations that record usage events: the only ones an `events` key may call. */
const EVENT_OPERATIONS = new Set<OperationId>(['sendUsageEvent', 'sendUsageEventBatch']);

const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

export interface ApiDependencies {
  config: Config;
  orm: Orm;
  gateway: PaymentGateway;
  clock: Clock;
  handlers: OperationHandlers;
  /** Check every response against the contract (tests), so a handler cannot drift from it. */
  validateResponses: boolean;
}

declare module 'koa' {
  interface DefaultState {
    rawBody?: string;
    /** The webhook's body as bytes (hashed for its log's payload_sha256). */
    rawBodyBytes?: Buffer;
    operationId?: OperationId;
  }
}

/** Ajv's error path (`/requestBody/plan_id`, `/query/page`) as the field name a client sent. */
function fieldErrors(errors: ErrorObject[]): FieldError[] {
  const seen = new Map<string, string>();
  for (const e of errors) {
    // Array items as `events[3]`, as the services name them.
    let field = e.instancePath
      .replace(/^\/(requestBody|query|path|header|cookie)/, '')
      .replace(/\/(\d+)(?=\/|$)/g, '[$1]')
      .replace(/^\//, '')
      .replace(/\//g, '.');
    const params = e.params as Record<string, unknown>;
    if (e.keyword === 'required') field = [field, params.missingProperty].filter(Boolean).join('.');
    if (e.keyword === 'additionalProperties') field = [field, params.additionalProperty].filter(Boolean).join('.');
    if (e.instancePath === '' && e.keyword === 'required' && params.missingProperty === 'requestBody') field = 'body';
    let message = e.message ?? 'is not valid';
    if (e.keyword === 'enum') message = `must be one of: ${(params.allowedValues as unknown[]).join(', ')}`;
    if (e.keyword === 'additionalProperties') message = 'is not an allowed field';
    if (!seen.has(field || 'body')) seen.set(field || 'body', message);
  }
  return [...seen].map(([field, message]) => ({ field, message }));
}

function declaresIdempotencyKey(operation: Operation): boolean {
  return (operation.parameters ?? []).some(
    (p) => 'in' in p && p.in === 'header' && p.name.toLowerCase() === 'idempotency-key',
  );
}

/**
 * Staff operations: the staff API's, under /admin/ (docs/support.md). An API key may
 * also ask for a customer's hosted-page link, which is no staff operation.
 */
function isStaffOperation(operation: Operation | undefined): boolean {
  return operation?.path.startsWith('/admin/') ?? false;
}

function requiresAuthentication(operation: Operation): boolean {
  return (operation.security ?? []).length > 0;
}

/** A customer operation: one an API key may call for the customer Billing-Customer names. */
function isCustomerOperation(operation: Operation | undefined): boolean {
  return (operation?.security ?? []).some((requirement) => 'customerApiKey' in requirement);
}

/**
 * The idempotency scope of a key's request for a customer: neither the key's own requests nor
 * the customer's, nor another customer's through the same key (a UUID-shaped digest, as the
 * records' user column holds).
 */
function onBehalfScope(keyId: string, customerId: string): string {
  const hex = createHash('sha256').update(`on-behalf\u0000${keyId}\u0000${customerId}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/** Compiles each operation's request validators, one operation per turn of the event loop. */
function precompileInTurns(api: OpenAPIBackend, operations: Operation[]): void {
  const pending = operations.filter((op) => !RAW_BODY_OPERATIONS.has(op.operationId as OperationId));
  const next = (): void => {
    const operation = pending.shift();
    if (!operation) return;
    api.validator.getRequestValidatorsForOperation(operation.operationId!);
    setImmediate(next).unref();
  };
  setImmediate(next).unref();
}

/**
 * Builds the contract-driven API: openapi-backend routes by operationId, authorises by the
 * contract's security schemes and validates every request before a handler runs. Operations
 * without a handler answer 501.
 */
export interface ContractApi {
  middleware: Middleware;
  /**
   * Throws when an answer breaks the contract: a status the operation does not document, or a
   * JSON body its schema refuses (only with validateResponses; tests). For the fast paths, which
   * answer without the middleware.
   */
  checkAnswer(operationId: OperationId, status: number, body: unknown): void;
}

export async function createApiMiddleware(deps: ApiDependencies): Promise<ContractApi> {
  // Tests check the contract document itself (openapi.yaml, parsed here) and every response.
  // Production reads the contract the build parsed (src/http/contract-document.ts) and compiles
  // the request validators after the server answers (below): the strict init (document check,
  // Ajv meta-schema checks, response validators) took 1.4 s of a 2.6 s start (bench/README.md).
  const checkContract = deps.validateResponses;
  const api = new OpenAPIBackend({
    definition: checkContract ? OPENAPI_PATH : contractDefinition(),
    apiRoot: API_ROOT,
    strict: true,
    quick: !checkContract,
    validate: (c) => !RAW_BODY_OPERATIONS.has(c.operation.operationId as OperationId),
    // Paths in the contract keep their trailing slash; requests without one are given one below.
    ignoreTrailingSlashes: false,
    coerceTypes: true,
    ajvOpts: { allErrors: true, strict: false, validateSchema: checkContract },
    customizeAjv: (ajv) => {
      addFormats(ajv, ['date-time', 'date', 'email', 'uri']);
      // Canonical UUIDs only (src/domain/ids.ts): ajv-formats' `uuid` also takes `urn:uuid:…`.
      ajv.addFormat('uuid', isUuid);
      return ajv;
    },
  });

  api.registerSecurityHandler('basicAuth', (_c: OpenApiContext, ctx: KoaContext) => ctx.state.authMethod === 'basic');
  api.registerSecurityHandler('sessionCookie', (_c: OpenApiContext, ctx: KoaContext) => ctx.state.authMethod === 'session');
  // A key's Billing-Customer that names nobody fails a customer operation's security whatever else it
  // lists (the hosted links also take a key alone): the unauthorized handler answers 404.
  api.registerSecurityHandler(
    'staffApiKey',
    (c: OpenApiContext, ctx: KoaContext) => ctx.state.authMethod === 'api_key' && !(ctx.state.onBehalfUnknown !== undefined && isCustomerOperation(c.operation)),
  );
  api.registerSecurityHandler('customerApiKey', (_c: OpenApiContext, ctx: KoaContext) => ctx.state.authMethod === 'api_key' && ctx.state.onBehalfOf !== undefined);

  await api.init();
  // openapi-backend rebuilds its operation list on every request (and on every handler
  // registered, which made registering them all quadratic); it never changes after init.
  const operations = api.router.getOperations();
  api.router.getOperations = () => operations;
  const byId = new Map(operations.map((op) => [op.operationId, op]));
  api.router.getOperation = (id: string) => byId.get(id);
  // It also parses every request twice: before routing, for a preRoutingHandler (we register
  // none; notFound and methodNotAllowed read only Koa's context), and again with the matched
  // operation, which replaces the first result unread. Only the second one is done.
  const parseRequest = api.router.parseRequest.bind(api.router);
  api.router.parseRequest = (req, operation) =>
    operation ? parseRequest(req, operation) : { method: req.method, path: req.path, headers: {}, query: {}, params: {}, cookies: {}, requestBody: undefined };

  // Registered after init, so that strict mode checks each operationId against the list above.
  api.register({
    notFound: (_c: OpenApiContext, ctx: KoaContext) => sendProblem(ctx, problem('not_found', `No operation at ${ctx.method} ${ctx.path}.`)),
    methodNotAllowed: (_c: OpenApiContext, ctx: KoaContext) =>
      sendProblem(ctx, problem('method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}.`)),
    unauthorizedHandler: (c: OpenApiContext, ctx: KoaContext) => {
      if (ctx.state.authMethod === 'api_key' && isCustomerOperation(c.operation)) {
        if (ctx.state.onBehalfUnknown !== undefined) return sendProblem(ctx, problem('not_found', `Customer "${ctx.state.onBehalfUnknown}" not found.`));
        return sendProblem(
          ctx,
          problem('validation_error', `An API key calling a customer operation names the customer in the ${BILLING_CUSTOMER_HEADER} header.`, [
            { field: BILLING_CUSTOMER_HEADER, message: 'is required with an API key: the customer (id, username or ext:<external_id>) the request acts for' },
          ]),
        );
      }
      ctx.set('WWW-Authenticate', 'Basic realm="billing"');
      sendProblem(ctx, problem('not_authenticated', 'Authentication required: HTTP Basic or a session cookie.'));
    },
    validationFail: (c: OpenApiContext, ctx: KoaContext) => {
      if (isStaffOperation(c.operation) && !ctx.state.staff) return sendNoSuchRoute(ctx);
      // A path whose id or slug is no valid spelling names no resource: 404, never a 400 or a 500.
      if ((c.validation.errors ?? []).some((e) => (e as ErrorObject).instancePath.startsWith('/path'))) {
        return sendProblem(ctx, problem('not_found', `Nothing is found at ${ctx.path}.`));
      }
      const errors = fieldErrors((c.validation.errors ?? []) as ErrorObject[]);
      sendProblem(ctx, problem('validation_error', `The request has ${errors.length} invalid field${errors.length === 1 ? '' : 's'}.`, errors));
    },
    notImplemented: (c: OpenApiContext, ctx: KoaContext) =>
      sendProblem(ctx, problem('not_implemented', `${c.operation.operationId} is not implemented yet.`)),
  });

  for (const [operationId, handler] of Object.entries(deps.handlers)) {
    api.register(operationId, (c: OpenApiContext, ctx: KoaContext) => runOperation(operationId as OperationId, handler as never, c, ctx));
  }

  // Quick mode compiles an operation's validators on its first request. They are compiled once
  // per process all the same, one operation per turn of the event loop as soon as the app is
  // built: the server answers meanwhile, and a request for an operation not compiled yet
  // compiles its own first (the same validators, a few ms).
  if (!checkContract) precompileInTurns(api, operations);

  function checkBody(operation: Operation, status: number, body: unknown): void {
    if (BODILESS_STATUSES.has(status)) return;
    const check = api.validateResponse(body, operation, status);
    if (check.errors) {
      throw new Error(`${operation.operationId} answered ${status} with a body that breaks the contract: ${JSON.stringify(check.errors)}`);
    }
  }

  function checkStatus(operation: Operation | undefined, operationId: string, status: number): void {
    if (!Object.keys(operation?.responses ?? {}).includes(String(status))) {
      throw new Error(`${operationId} answered ${status}, which its contract does not document`);
    }
  }

  async function runOperation(
    operationId: OperationId,
    handler: (req: OperationRequest<OperationId>) => Promise<{ status: number; body: unknown; contentType?: string; headers?: Record<string, string> }>,
    c: OpenApiContext,
    ctx: KoaContext,
  ): Promise<void> {
    const operation = c.operation;
    ctx.state.operationId = operationId;
    // Usage events (docs/usage.md) take a key of scope `events` or `write`; an `events` key sends
    // events and nothing else.
    const keyScope = ctx.state.authMethod === 'api_key' ? ctx.state.staff?.scope : undefined;
    if (EVENT_OPERATIONS.has(operationId) && keyScope !== 'events' && keyScope !== 'write') {
      return sendProblem(ctx, problem('insufficient_scope', 'Sending usage events needs an API key of scope events or write.'));
    }
    if (!EVENT_OPERATIONS.has(operationId) && keyScope === 'events') {
      // Not staff: on a staff route, the 404 of a route that does not exist, as for anyone else.
      if (isStaffOperation(operation)) return sendNoSuchRoute(ctx);
      return sendProblem(ctx, problem('invalid_api_key', 'This API key may only send usage events.'));
    }
    // The staff gate (staff-gate.ts) already turned away non-staff by path; this holds whatever
    // spelling of a path reached a staff operation.
    if (isStaffOperation(operation)) {
      if (!ctx.state.staff) return sendNoSuchRoute(ctx);
      if (mayWrite(ctx.method) && ctx.state.staff.scope !== 'write') {
        return sendProblem(ctx, problem('insufficient_scope', 'This API key may only read; acting needs a write key.'));
      }
    }

    if (isCustomerOperation(operation)) {
      if (ctx.state.authMethod === 'api_key' && mayWrite(ctx.method) && ctx.state.staff?.scope !== 'write') {
        return sendProblem(ctx, problem('insufficient_scope', 'This API key may only read; acting for a customer needs a write key.'));
      }
      if (ctx.state.authMethod !== 'api_key' && ctx.get(BILLING_CUSTOMER_HEADER) !== '') {
        return sendProblem(
          ctx,
          problem('validation_error', `${BILLING_CUSTOMER_HEADER} applies to API keys only.`, [
            { field: BILLING_CUSTOMER_HEADER, message: 'applies to API keys only; a customer acts for themselves' },
          ]),
        );
      }
    }

    // Session cookies only: a key (on a staff route or for a customer) is no ambient credential.
    if (requiresAuthentication(operation) && ctx.state.authMethod === 'session' && mayWrite(ctx.method)) {
      const expected = ctx.session?.csrfToken;
      if (typeof expected !== 'string' || ctx.get('x-csrf-token') !== expected) {
        return sendProblem(ctx, problem('csrf_failed', 'Send the X-CSRF-Token header from the login response with session-authenticated changes.'));
      }
    }

    // A path segment no database can store (NUL, an unpaired surrogate) names no resource: the
    // same 404 as a path whose id is no valid spelling, before any query is made with it.
    const params = canonicalPathParams(c.request.params ?? {});
    if (Object.values(params).some((v) => typeof v === 'string' && unstorableReason(v) !== null)) {
      return sendProblem(ctx, problem('not_found', `Nothing is found at ${ctx.path}.`));
    }

    const services: ServiceContext = {
      em: RequestContext.getEntityManager() as EntityManager,
      config: deps.config,
      gateway: deps.gateway,
      clock: deps.clock,
    };
    const request = {
      koa: ctx,
      query: (c.request.query ?? {}) as never,
      path: params as never,
      body: c.request.requestBody as never,
      // Read on use: the user's entity is made only for the operations that need it.
      get user() {
        return ctx.state.user ?? null;
      },
      services,
    } satisfies OperationRequest<OperationId>;

    const onBehalfOf = ctx.state.authMethod === 'api_key' ? ctx.state.onBehalfOf : undefined;
    /**
     * NOTE: what a key did for a customer is kept in the audit trail: the key as actor, the
     * customer as target, `on_behalf_of` among the changes. It is recorded after the operation's
     * own transaction committed: a process that dies in between keeps the change without it.
     */
    const recordOnBehalf = async (body: unknown): Promise<void> => {
      const resource = body !== null && typeof body === 'object' && typeof (body as { id?: unknown }).id === 'string' ? (body as { id: string }).id : null;
      await recordAuditEvent({ em: deps.orm.em.fork() as EntityManager }, staffActor(ctx), {
        action: `on_behalf.${operationId}`,
        target: { type: 'customer', id: onBehalfOf!.id },
        changes: { on_behalf_of: [null, onBehalfOf!.id], operation: [null, `${ctx.method} ${ctx.path}`], resource: [null, resource] },
      });
    };

    const execute = async (): Promise<StoredResponse> => {
      const result = await handler(request);
      if (result.headers) ctx.set(result.headers);
      if (onBehalfOf && mayWrite(ctx.method) && result.status < 300) await recordOnBehalf(result.body);
      return { status: result.status, contentType: result.contentType ?? 'application/json', body: result.body };
    };

    const idempotencyKey = ctx.get('idempotency-key');
    const response =
      idempotencyKey && ctx.state.authMethod && ctx.method === 'POST' && declaresIdempotencyKey(operation)
        ? await withIdempotency(
            deps.orm,
            {
              // A key's requests are its own: its id scopes its idempotency keys as a user's id does;
              // for a customer, the key and that customer together.
              userId: onBehalfOf
                ? onBehalfScope(ctx.state.staff!.id, onBehalfOf.id)
                : ctx.state.authMethod === 'api_key' && ctx.state.staff
                  ? ctx.state.staff.id
                  : requireUserId(request),
              key: idempotencyKey,
              fingerprint: requestFingerprint(ctx.method, ctx.path.replace(/\/?$/, '/'), ctx.state.rawBody ?? ''),
              now: deps.clock.now(),
            },
            execute,
          )
        : await execute();

    if (deps.validateResponses && response.contentType === 'application/json') checkBody(operation, response.status, response.body);
    ctx.status = response.status;
    if (!BODILESS_STATUSES.has(response.status)) {
      ctx.type = response.contentType;
      ctx.body = response.body;
    }
  }

  const middleware: Middleware = async (ctx, next) => {
    if (ctx.path !== API_ROOT && !ctx.path.startsWith(`${API_ROOT}/`)) return next();
    // The same path without its trailing slash is served too.
    const path = ctx.path.endsWith('/') ? ctx.path : `${ctx.path}/`;
    // Percent-encoding that is no UTF-8 names no resource (and the router's decoding of path
    // parameters would throw on it).
    if (!isDecodablePath(path)) return sendProblem(ctx, problem('not_found', 'The path is not valid percent-encoded UTF-8.'));

    let body: unknown;
    if (mayWrite(ctx.method)) {
      if (path === WEBHOOK_PATH) await readWebhookBody(ctx, deps.config.maxBodyBytes);
      else {
        const raw = (await readRawBytes(ctx, deps.config.maxBodyBytes)).toString('utf8');
        ctx.state.rawBody = raw;
        const contentType = (ctx.get('content-type') || '').split(';')[0].trim().toLowerCase();
        if (raw.trim() !== '' && contentType !== 'application/json' && !contentType.endsWith('+json')) {
          throw new DomainError('unsupported_media_type', 'Send the body as application/json.');
        }
        // Refused before parsing: nothing below may walk a body of unbounded depth.
        if (jsonNestsDeeperThan(raw, MAX_JSON_DEPTH)) {
          throw new DomainError('validation_error', `The body nests deeper than ${MAX_JSON_DEPTH} levels.`, [
            { field: 'body', message: `must not nest deeper than ${MAX_JSON_DEPTH} levels` },
          ]);
        }
        const parsed = parseJsonBody(raw);
        if (!parsed.ok) {
          throw new DomainError('validation_error', 'The body is not valid JSON.', [{ field: 'body', message: parsed.error }]);
        }
        body = parsed.value;
      }
    }

    // Text neither database can store (NUL, unpaired surrogates) is refused on both alike, naming
    // the field. The webhook logs its raw body whatever it holds (NUL stored as U+FFFD).
    const unstorable = path === WEBHOOK_PATH ? null : (unstorableField(ctx.query) ?? unstorableField(body));
    if (unstorable !== null) throw new DomainError('validation_error', 'The request contains text that cannot be stored.', [unstorable]);

    const headers = { ...ctx.headers } as Record<string, string | string[]>;
    // openapi-backend includes the body in validation only for an object or a JSON content type.
    if (body !== undefined) headers['content-type'] = 'application/json';
    await api.handleRequest({ method: ctx.method, path, query: ctx.querystring, body, headers }, ctx);
    if (deps.validateResponses && ctx.state.operationId) checkStatus(api.router.getOperation(ctx.state.operationId), ctx.state.operationId, ctx.status);
  };

  return {
    middleware,
    checkAnswer(operationId, status, body) {
      if (!deps.validateResponses) return;
      const operation = api.router.getOperation(operationId);
      checkStatus(operation, operationId, status);
      if (operation) checkBody(operation, status, body);
    },
  };
}
