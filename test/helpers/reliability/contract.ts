import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import fc from 'fast-check';
import { parse } from 'yaml';
import { computeSignature } from '../../../src/gateway/signature.js';
import { PROJECT_ROOT } from './server-process.js';

/*
 * openapi.yaml as a source of hostile requests (fast-check arbitraries built from its schemas,
 * valid and invalid) and as the judge of every answer (documented status, body schema via ajv).
 */

type Json = any;
type Schema = Record<string, Json>;

const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

export interface Operation {
  id: string;
  method: string;
  /** As written in the contract, e.g. /payments/{id}/refund/ */
  path: string;
  /** The path's own server (`/metrics`, the probes: '' for the host's root), or null: under the API mount. */
  base: string | null;
  secured: boolean;
  /** A staff route (its security names the staff API key scheme): sent with the staff account. */
  staff: boolean;
  params: { name: string; in: 'path' | 'query' | 'header'; required: boolean; schema: Schema }[];
  body: { schema: Schema; required: boolean } | null;
  /** status → schema by content type (null: no body documented). */
  responses: Map<number, Map<string, Schema> | null>;
}

export interface Contract {
  operations: Operation[];
  resolve(schema: Schema): Schema;
  /** Problems with an answer, or [] when it matches the contract. */
  check(op: Operation, status: number, contentType: string | null, body: unknown): string[];
}

export function loadContract(): Contract {
  const doc = parse(readFileSync(join(PROJECT_ROOT, 'openapi.yaml'), 'utf8')) as Json;
  const pointer = (ref: string): Json => ref.replace(/^#\//, '').split('/').reduce((node: Json, key) => node[key.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
  const resolve = (schema: Schema): Schema => {
    let s = schema;
    for (let i = 0; s && typeof s.$ref === 'string' && i < 20; i++) s = pointer(s.$ref);
    return s;
  };

  const ajv = new Ajv({ strict: false, allErrors: true, validateSchema: false });
  addFormats(ajv);
  ajv.addSchema({ $id: 'openapi', components: doc.components }, 'openapi');
  const relink = (node: Json): Json =>
    Array.isArray(node) ? node.map(relink)
    : node && typeof node === 'object' ? Object.fromEntries(Object.entries(node).map(([k, v]) => [k, k === '$ref' && typeof v === 'string' ? `openapi${v}` : relink(v)]))
    : node;
  const validators = new Map<Schema, ValidateFunction>();
  const validatorFor = (schema: Schema) => {
    let v = validators.get(schema);
    if (!v) validators.set(schema, (v = ajv.compile(relink(schema))));
    return v;
  };

  const operations: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
    for (const method of ['get', 'post', 'put', 'patch', 'delete']) {
      const raw = item[method];
      if (!raw) continue;
      const responses = new Map<number, Map<string, Schema> | null>();
      for (const [status, response] of Object.entries(raw.responses as Record<string, Json>)) {
        const media = Object.entries((resolve(response).content ?? {}) as Record<string, Json>);
        responses.set(Number(status), media.length > 0 ? new Map(media.map(([type, m]) => [type, m.schema as Schema])) : null);
      }
      const security = raw.security ?? doc.security ?? [];
      operations.push({
        id: raw.operationId,
        method: method.toUpperCase(),
        path,
        base: item.servers?.[0] ? String(item.servers[0].url).replace(/\/$/, '') : null,
        secured: security.length > 0,
        staff: security.some((requirement: Json) => 'staffApiKey' in requirement),
        params: [...(item.parameters ?? []), ...(raw.parameters ?? [])].map((p: Json) => {
          const r = resolve(p);
          return { name: r.name, in: r.in, required: Boolean(r.required), schema: r.schema ?? {} };
        }),
        body: raw.requestBody ? { schema: resolve(raw.requestBody).content['application/json'].schema, required: Boolean(resolve(raw.requestBody).required) } : null,
        responses,
      });
    }
  }

  return {
    operations,
    resolve,
    check(op, status, contentType, body) {
      if (!op.responses.has(status)) return [`${status} is not documented for ${op.id}`];
      const documented = op.responses.get(status) ?? null;
      if (documented === null) return body === '' || body === undefined ? [] : [`${status} documents no body, got ${String(body).slice(0, 200)}`];
      const type = (contentType ?? '').split(';')[0].trim();
      const schema = documented.get(type);
      if (!schema) return [`${status} answered ${type || 'no content type'}, documented ${[...documented.keys()].join(' or ')}`];
      const validate = validatorFor(schema);
      return validate(body) ? [] : (validate.errors ?? []).map((e) => `${status} body ${e.instancePath || '/'} ${e.message}`);
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Values

/** Strings an attacker tries first. */
export const SQL_INJECTION = [
  "' OR '1'='1",
  "'; DROP TABLE users; --",
  '" OR ""="',
  "1; SELECT pg_sleep(5) --",
  "' UNION SELECT password_hash FROM users --",
  "price; DELETE FROM plans",
  "-price, (SELECT 1)",
  "\\'; --",
  '%27%20OR%201%3D1',
];

const hostileString = fc.oneof(
  fc.constantFrom(...SQL_INJECTION),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  // Not valid Unicode text (lone surrogates), or refused by PostgreSQL's text and jsonb (NUL).
  fc.constantFrom('\ud800', 'a\udfffb', '\udc00\ud800', 'x\ud83d', 'a\u0000\ud800'),
  fc.string({ unit: fc.oneof(fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)), fc.constantFrom('a', '😀')), minLength: 1, maxLength: 8 }),
  fc.constantFrom('', ' ', '\u0000', 'null', 'undefined', '../../etc/passwd', '<script>alert(1)</script>', '😀'.repeat(300), '\u202e\u200b', 'ｆｕｌｌｗｉｄｔｈ'),
  fc.integer({ min: 1, max: 200_000 }).map((n) => 'x'.repeat(n)),
);

const hostileNumber = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(-1, 0, -0, 1e308, -1e308, 2 ** 53 + 1, 0.001, 1.5, 99999999999999999999),
);

/** Anything at all, of any JSON type. */
export const hostileValue: fc.Arbitrary<Json> = fc.oneof(
  { weight: 4, arbitrary: hostileString },
  { weight: 3, arbitrary: hostileNumber },
  { weight: 1, arbitrary: fc.constantFrom(null, true, false, [], {}, [null], { $gt: '' }, JSON.parse('{"__proto__": {"admin": true}}')) },
  { weight: 1, arbitrary: fc.array(fc.oneof(hostileString, hostileNumber), { maxLength: 4 }) },
);

/** Values that satisfy a (resolved) schema; `hints` supplies real values for named fields. */
export function validArb(contract: Contract, schemaIn: Schema, hints: Record<string, fc.Arbitrary<Json>> = {}, name = '', depth = 0): fc.Arbitrary<Json> {
  const schema = contract.resolve(schemaIn);
  let arb: fc.Arbitrary<Json>;
  if (hints[name]) arb = hints[name];
  else if (schema.oneOf || schema.anyOf) arb = fc.oneof(...(schema.oneOf ?? schema.anyOf).map((s: Schema) => validArb(contract, s, hints, name, depth + 1)));
  else if (schema.enum) arb = fc.constantFrom(...schema.enum);
  else if (schema.type === 'string') {
    if (schema.format === 'uuid') arb = fc.uuid();
    else if (schema.format === 'date-time') arb = fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }).map((d) => d.toISOString());
    else if (schema.format === 'date') arb = fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10));
    else if (schema.format === 'email') arb = fc.emailAddress();
    else if (schema.pattern) arb = fc.stringMatching(new RegExp(schema.pattern)).filter((s) => s.length <= (schema.maxLength ?? 100));
    else arb = fc.string({ minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 40, 60), unit: 'grapheme' });
  } else if (schema.type === 'integer') arb = fc.integer({ min: schema.minimum ?? -1000, max: schema.maximum ?? 1_000_000 });
  else if (schema.type === 'number') arb = fc.integer({ min: schema.minimum ?? 0, max: 10_000_000 });
  else if (schema.type === 'boolean') arb = fc.boolean();
  else if (schema.type === 'array') arb = depth > 3 ? fc.constant([]) : fc.array(validArb(contract, schema.items ?? {}, hints, '', depth + 1), { maxLength: 3 });
  else if (schema.type === 'object' || schema.properties) {
    const props = Object.entries((schema.properties ?? {}) as Record<string, Schema>);
    arb =
      depth > 3 ? fc.constant({})
      : fc.record(Object.fromEntries(props.map(([k, s]) => [k, validArb(contract, s, hints, k, depth + 1)])), { requiredKeys: schema.required ?? [] });
  } else arb = fc.oneof(fc.string({ maxLength: 10 }), fc.integer(), fc.boolean());
  return schema.nullable ? fc.option(arb, { nil: null }) : arb;
}

/** A valid value, or one broken in the ways clients and attackers break them. */
export function hostileArb(contract: Contract, schemaIn: Schema, hints: Record<string, fc.Arbitrary<Json>> = {}): fc.Arbitrary<Json> {
  const schema = contract.resolve(schemaIn);
  const valid = validArb(contract, schema, hints);
  const isObject = schema.type === 'object' || schema.properties;
  if (!isObject) return fc.oneof({ weight: 2, arbitrary: valid }, { weight: 3, arbitrary: hostileValue });
  const keys = Object.keys(schema.properties ?? {});
  const required: string[] = schema.required ?? [];
  return fc.oneof(
    { weight: 5, arbitrary: valid },
    // one field of the wrong type or value
    {
      weight: 3,
      arbitrary: fc.tuple(valid, fc.constantFrom(...(keys.length ? keys : ['x'])), hostileValue).map(([v, k, bad]) => ({ ...v, [k]: bad })),
    },
    // a required field missing
    {
      weight: required.length ? 1 : 0,
      arbitrary: fc.tuple(valid, fc.constantFrom(...(required.length ? required : ['x']))).map(([v, k]) => {
        const copy = { ...v };
        delete copy[k];
        return copy;
      }),
    },
    // an extra field
    { weight: 1, arbitrary: fc.tuple(valid, fc.string({ minLength: 1, maxLength: 20 }), hostileValue).map(([v, k, bad]) => ({ ...v, [k]: bad })) },
    // not an object at all
    { weight: 1, arbitrary: hostileValue },
  );
}

// ---------------------------------------------------------------------------------------------
// Requests

export interface HostileRequest {
  method: string;
  /** Path under the API root, with its query string. */
  url: string;
  headers: Record<string, string>;
  body?: string;
  /** The gateway's signature on it is right (webhook only). */
  signed: boolean;
  /** Which credentials were sent. */
  auth: 'user' | 'none' | 'wrong' | 'malformed';
}

export interface RequestContext {
  credentials: { username: string; password: string };
  /** A staff user's, for the staff routes (a customer finds none of them: a 404 tests nothing). */
  staffCredentials?: { username: string; password: string };
  serverKey: string;
  /** Real values for path parameters (the user's own ids, another user's ids), by name. */
  pathValues: Record<string, string[]>;
  /** Real values for body fields (plan slugs, subscription ids…), by field name. */
  bodyHints: Record<string, fc.Arbitrary<Json>>;
  orderIds: string[];
}

const headerSafe = fc.string({ minLength: 1, maxLength: 300 }).map((s) => s.replace(/[^\x21-\x7e]/g, 'a'));

function notificationArb(contract: Contract, op: Operation, rc: RequestContext): fc.Arbitrary<{ body: string; signed: boolean }> {
  const payload = fc.record({
    order_id: fc.oneof(fc.constantFrom(...rc.orderIds), hostileString),
    transaction_status: fc.oneof(fc.constantFrom('pending', 'settlement', 'capture', 'deny', 'cancel', 'expire', 'refund', 'partial_refund', 'failure'), hostileString),
    status_code: fc.constantFrom('200', '201', '202', '407', ''),
    gross_amount: fc.oneof(fc.constantFrom('50000.00', '150000.00', '20000.00'), hostileString),
    fraud_status: fc.constantFrom('accept', 'challenge', 'deny', undefined),
    refund_amount: fc.option(fc.constantFrom('1000.00', '50000.00', 'abc'), { nil: undefined }),
    extra: fc.option(validArb(contract, op.body!.schema), { nil: undefined }),
  });
  return fc.oneof(
    // signed: what the gateway (or someone holding the key) sends
    payload.map((p) => {
      const body: Record<string, Json> = { ...(p.extra ?? {}), ...p, extra: undefined };
      body.signature_key = computeSignature(String(body.order_id), String(body.status_code), String(body.gross_amount), rc.serverKey);
      return { body: JSON.stringify(body), signed: true };
    }),
    // unsigned or forged
    fc.tuple(payload, fc.oneof(fc.constant(undefined), hostileString, fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: 128, maxLength: 128 }))).map(([p, sig]) => ({
      body: JSON.stringify({ ...p, extra: undefined, signature_key: sig }),
      signed: false,
    })),
    // not even JSON
    fc.oneof(hostileString, fc.constantFrom('{', '[]', 'null', '{"order_id":', nested(10_000), nested(100_000, 'object'), `{"order_id": ${nested(5_000, 'mixed')}}`)).map((s) => ({ body: s, signed: false })),
  );
}

const DEPTHS = [31, 32, 33, 64, 1_000, 10_000, 100_000];

/** A JSON text with a value nested `depth` containers deep in place of one field (or as the body). */
function deepBodyArb(contract: Contract, schema: Schema, hints: Record<string, fc.Arbitrary<Json>>): fc.Arbitrary<string> {
  const props = Object.keys(contract.resolve(schema).properties ?? {});
  return fc
    .tuple(validArb(contract, schema, hints), fc.constantFrom(...props, '(body)'), fc.constantFrom(...DEPTHS), fc.constantFrom('array' as const, 'object' as const, 'mixed' as const))
    .map(([valid, field, depth, kind]) => {
      if (field === '(body)' || valid === null || typeof valid !== 'object') return nested(depth, kind);
      return JSON.stringify({ ...valid, [field]: '__DEEP__' }).replace('"__DEEP__"', nested(depth, kind));
    });
}

/** Requests for one operation: path, query, headers, credentials and body, valid and hostile. */
/**
 * encodeURIComponent, except that a lone surrogate (which it refuses) is sent as the three bytes
 * a careless encoder makes of it (`%ED%A0%80`): percent-encoding that is no UTF-8.
 */
export function encodePathValue(value: string): string {
  let out = '';
  for (const part of value.split(/([\uD800-\uDFFF])/)) {
    if (part === '') continue;
    try {
      out += encodeURIComponent(part);
    } catch {
      const c = part.charCodeAt(0);
      out += [0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join('');
    }
  }
  return out;
}

/**
 * Spellings of a real id that are no canonical UUID (issue 28 row 2: `urn:uuid:` answered 500 on
 * PostgreSQL): each must name nothing (404), never a 5xx. Raw text: encodePathValue escapes it.
 */
export const ID_SPELLINGS: [string, (id: string) => string][] = [
  ['urn:uuid: prefix', (id) => `urn:uuid:${id}`],
  ['braces', (id) => `{${id}}`],
  ['no hyphens', (id) => id.replace(/-/g, '')],
  ['leading space', (id) => ` ${id}`],
  ['trailing tab', (id) => `${id}\t`],
  ['trailing newline', (id) => `${id}\n`],
  ['one digit more', (id) => `${id}0`],
  ['overlong', (id) => id.repeat(40)],
  ['hyphens moved', (id) => `${id.replace(/-/g, '').slice(0, 4)}-${id.replace(/-/g, '').slice(4)}`],
  ['non-hex digit', (id) => `${id.slice(0, 35)}g`],
  ['fullwidth digits', (id) => id.replace(/[0-9]/g, (d) => String.fromCharCode(0xff10 + Number(d)))],
  ['SQL after it', (id) => `${id}' OR '1'='1`],
];

/** Which requests to make: every kind (default), or only the attacker's classes of issue 16 in bodies. */
export type RequestFocus = 'all' | 'attacker';

/** A valid body with invalid text (lone surrogates, NUL) in a field, in a key, or one level down. */
function invalidTextBodyArb(contract: Contract, schema: Schema, hints: Record<string, fc.Arbitrary<Json>>): fc.Arbitrary<string> {
  const props = Object.keys(contract.resolve(schema).properties ?? {});
  const bad = fc.oneof(fc.constantFrom(...INVALID_TEXT), fc.tuple(fc.string({ maxLength: 5 }), fc.constantFrom(...INVALID_TEXT)).map(([a, b]) => a + b));
  return fc
    .tuple(validArb(contract, schema, hints), fc.constantFrom(...props, '(key)'), bad, fc.boolean())
    .map(([valid, field, text, deeper]) => {
      const base = valid !== null && typeof valid === 'object' && !Array.isArray(valid) ? valid : {};
      if (field === '(key)') return JSON.stringify({ ...base, [text]: 1 });
      return JSON.stringify({ ...base, [field]: deeper ? { note: text } : text });
    });
}

export function requestArb(contract: Contract, op: Operation, rc: RequestContext, focus: RequestFocus = 'all'): fc.Arbitrary<HostileRequest> {
  const pathParams = op.params.filter((p) => p.in === 'path');
  const queryParams = op.params.filter((p) => p.in === 'query');
  const pathArb = fc.record(
    Object.fromEntries(
      pathParams.map((p) => [
        p.name,
        fc.oneof(
          { weight: 6, arbitrary: fc.constantFrom(...(rc.pathValues[p.name] ?? ['x'])) },
          { weight: 2, arbitrary: validArb(contract, p.schema) },
          // a real value in a spelling that is no canonical UUID (and upper case, which is one)
          {
            weight: 2,
            arbitrary: fc
              .tuple(fc.constantFrom(...(rc.pathValues[p.name] ?? ['x'])), fc.constantFrom(...ID_SPELLINGS.map(([, spell]) => spell), (id: string) => id.toUpperCase()))
              .map(([value, spell]) => spell(value)),
          },
          // `.` and `..` are dot segments, never values, by the rules of URLs (RFC 3986 §5.2.4).
          { weight: 1, arbitrary: hostileString.map((s) => s.slice(0, 300)).filter((s) => s !== '' && s !== '.' && s !== '..') },
        ),
      ]),
    ),
  );
  const queryArb = fc.record(
    Object.fromEntries([
      ...queryParams.map((p) => [p.name, fc.oneof({ weight: 4, arbitrary: validArb(contract, p.schema) }, { weight: 1, arbitrary: hostileValue })]),
      ['unexpected', fc.oneof({ weight: 9, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: hostileString })],
    ]),
    { requiredKeys: [] },
  );
  const authArb: fc.Arbitrary<HostileRequest['auth']> = op.secured
    ? fc.oneof({ weight: 20, arbitrary: fc.constant('user' as const) }, { weight: 1, arbitrary: fc.constantFrom('none' as const, 'wrong' as const, 'malformed' as const) })
    : fc.constantFrom('none', 'none', 'user');
  const bodyArb: fc.Arbitrary<{ body?: string; signed: boolean; contentType: string }> =
    focus === 'attacker' && op.body && op.id !== 'receiveGatewayNotification'
      ? fc
          .oneof(deepBodyArb(contract, op.body.schema, rc.bodyHints), invalidTextBodyArb(contract, op.body.schema, rc.bodyHints))
          .map((b) => ({ body: b, signed: false, contentType: 'application/json' }))
    : op.id === 'receiveGatewayNotification'
      ? notificationArb(contract, op, rc).map((b) => ({ ...b, contentType: 'application/json' }))
      : op.body
        ? fc.oneof(
            { weight: 9, arbitrary: hostileArb(contract, op.body.schema, rc.bodyHints).map((v) => ({ body: JSON.stringify(v) ?? 'null', signed: false, contentType: 'application/json' })) },
            { weight: 1, arbitrary: fc.constantFrom('{', 'not json', '', '{"a":1}').map((b) => ({ body: b, signed: false, contentType: 'application/json' })) },
            // nested deeper than any body of the API, at a field or as the whole body
            { weight: 1, arbitrary: deepBodyArb(contract, op.body.schema, rc.bodyHints).map((b) => ({ body: b, signed: false, contentType: 'application/json' })) },
            { weight: 1, arbitrary: fc.constantFrom('a=1', '<xml/>').map((b) => ({ body: b, signed: false, contentType: 'text/plain' })) },
          )
        : fc.constant({ body: undefined, signed: false, contentType: 'application/json' });
  const idempotencyArb = op.params.some((p) => p.name === 'Idempotency-Key') ? fc.option(headerSafe, { nil: undefined }) : fc.constant(undefined);

  return fc.record({ path: pathArb, query: queryArb, auth: authArb, body: bodyArb, idempotency: idempotencyArb, trailingSlash: fc.boolean() }).map((r) => {
    let path = op.path.replace(/\{(\w+)\}/g, (_, name: string) => encodePathValue(String((r.path as Record<string, Json>)[name])));
    if (!r.trailingSlash) path = path.replace(/\/$/, '');
    const query = new URLSearchParams();
    // Kept within what HTTP servers and proxies accept in a request line (Node: 16 KiB of headers).
    for (const [k, v] of Object.entries(r.query as Record<string, Json>)) if (v !== undefined) query.set(k, (typeof v === 'string' ? v : JSON.stringify(v)).slice(0, 1000));
    const headers: Record<string, string> = {};
    if (r.body.body !== undefined) headers['content-type'] = r.body.contentType;
    if (r.idempotency) headers['idempotency-key'] = r.idempotency;
    const { username, password } = op.staff && rc.staffCredentials ? rc.staffCredentials : rc.credentials;
    if (r.auth === 'user') headers.authorization = `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
    if (r.auth === 'wrong') headers.authorization = `Basic ${Buffer.from(`${username}:wrong-${password}`).toString('base64')}`;
    if (r.auth === 'malformed') headers.authorization = 'Basic !!!not-base64';
    const qs = query.toString();
    return { method: op.method, url: `${path}${qs ? `?${qs}` : ''}`, headers, body: r.body.body, signed: r.body.signed, auth: r.auth };
  });
}

// ---------------------------------------------------------------------------------------------
// Classes of input the attacker of issue 16 used

/**
 * Spellings of an absolute path that name the same resource: without or with doubled trailing
 * slash, repeated slashes, `.` and `..` segments (also percent-encoded), percent-encoded letters.
 * A server must answer each exactly as it answers the path itself. Send them with callRawPath:
 * fetch() resolves dot segments before sending.
 */
export function pathVariants(path: string): string[] {
  const segs = path.split('/').filter(Boolean);
  const head = segs.slice(0, -1);
  const last = segs[segs.length - 1] ?? '';
  const join = (parts: string[]) => `/${parts.join('/')}`;
  const hex = (c: string) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`;
  // The segment as spelled: its escapes (%XX) stay as they are, every other character may be
  // escaped. Escaping the `%` of an escape would name another resource (`%25ED` is "%ED").
  const tokens = last.match(/%[0-9A-Fa-f]{2}|[\s\S]/g) ?? [];
  const escaped = (t: string) => (t.length === 3 ? t : hex(t));
  return [
    join(segs),
    `${join(segs)}//`,
    `/${segs.join('//')}/`,
    `/${segs.join('///')}`,
    `${join([...head, '.', last])}/`,
    `${join([...head, 'x', '..', last])}/`,
    join([...head, 'x', '%2e%2E', last]),
    `${join([...head, escaped(tokens[0] ?? 'a') + tokens.slice(1).join('')])}/`,
    join([...head, tokens.map(escaped).join('')]),
    `${join(segs)}/.`,
    `${join(segs)}/x/..`,
  ];
}

/** Nesting of `n` containers: arrays, objects or both in turn. */
export function nested(n: number, kind: 'array' | 'object' | 'mixed' = 'array'): string {
  let open = '';
  let close = '';
  for (let i = 0; i < n; i++) {
    const array = kind === 'array' || (kind === 'mixed' && i % 2 === 0);
    open += array ? '[' : '{"a":';
    close = (array ? ']' : '}') + close;
  }
  return `${open}1${close}`;
}

/** Strings that are not valid Unicode text, or that PostgreSQL refuses in text and jsonb. */
export const INVALID_TEXT = ['\ud800', 'a\udfffb', '\udc00\ud800', 'x\ud83d', '\u0000', 'a\u0000\ud800'];
