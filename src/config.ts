import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { LOG_LEVELS, type LogLevel } from './logger.js';
import { PROJECT_ROOT } from './project-root.js';
import { sslSettingsOf } from './db/database-url.js';
import { normaliseNitku, normaliseNpwp } from './domain/tax-profile.js';

/** The one typed configuration object; `loadConfig()` builds it from the environment. */
export interface Config {
  env: 'development' | 'test' | 'production';
  host: string;
  port: number;
  /** `sqlite:/ABSOLUTE/PATH`, `sqlite::memory:` or `postgres://…` (a relative SQLite path is resolved from the project root). */
  databaseUrl: string;
  /**
   * SQLite: how long a statement waits for a write lock another process holds (a billing run, a
   * migration) before failing with "database is locked" (SQLITE_BUSY_TIMEOUT_MS, default 30,000).
   */
  sqliteBusyTimeoutMs: number;
  /**
   * PostgreSQL: how many connections each process holds at most (DATABASE_POOL_MAX, default 10).
   * Requests beyond it wait for a free one; every process counts against the server's
   * max_connections.
   */
  databasePoolMax: number;
  /**
   * Apply pending migrations when the server starts, creating the database if it is missing.
   * Default: only on the default SQLite database (DATABASE_URL unset), so that `npm start` works
   * out of the box while a mistyped URL never makes a new, empty database.
   */
  migrateOnStart: boolean;
  /**
   * On SIGTERM or SIGINT, how long requests already being answered may take to finish before
   * their connections are closed (SHUTDOWN_GRACE_SECONDS, default 10); new ones are refused at once.
   */
  shutdownGraceSeconds: number;
  gateway: {
    /** null means the built-in simulator mounted on this server. */
    baseUrl: string | null;
    serverKey: string;
    /** null means derived from the server's own address once it listens. */
    notificationUrl: string | null;
    timeoutMs: number;
  };
  /** The built-in gateway simulator (only when gateway.baseUrl is null); docs/gateway.md. */
  simulator: {
    /** when_asked: 3-D Secure whenever a charge asks for it (Midtrans); test_tokens_skip: sim-card-* tokens decide at once. */
    threeDs: 'when_asked' | 'test_tokens_skip';
    /** Delays of notification retries; null = Midtrans' schedule (2 min … 210 min). */
    notificationRetryMs: number[] | null;
    /** Time from a refund to the bank's confirmation (the second refund notification). */
    refundConfirmationMs: number;
  };
  subscriptionSettings: {
    PROTECTED_PATHS: string[];
    SUBSCRIPTION_REQUIRED_REDIRECT: string;
  };
  /**
   * First key signs; the rest still verify (rotation). Empty: a development secret kept beside
   * the SQLite file, made when the app starts (loading the configuration writes no file).
   */
  sessionSecrets: string[];
  /** Set the `Secure` flag on the session cookie (behind TLS). */
  secureCookies: boolean;
  trustProxy: boolean;
  topupMinAmount: string;
  topupMaxAmount: string;
  walletCurrency: string;
  renewalDueDays: number;
  /** `payments sync` also asks about payments and top-ups settled within this many days (0: only non-final ones). */
  reconcileLookbackDays: number;
  dunningRetryDays: number[];
  /** Seconds between the server's own billing passes (0: off, an external scheduler runs `billing run`). */
  billingSchedulerIntervalSeconds: number;
  /** Minutes after its period ends that an unrenewed subscription still gives access (docs/billing.md). */
  accessGraceMinutes: number;
  /**
   * Minutes after a period ends before its usage is invoiced (docs/usage.md): late events still
   * count until then. Access lasts at least as long (services/subscriptions/has-access.ts).
   */
  usageGraceMinutes: number;
  deliveryIntervalSeconds: number;
  smtpUrl: string | null;
  mailFrom: string;
  outboundWebhookUrl: string | null;
  outboundWebhookSecret: string | null;
  /** How long an outbound webhook receiver has to answer (tests shorten it). */
  outboundWebhookTimeoutMs: number;
  /** Failed logins allowed per username or IP within `loginThrottleWindowSeconds`. */
  loginThrottleLimit: number;
  loginThrottleWindowSeconds: number;
  /** Seconds a verified Basic credential stays cached (0 = verify every request). */
  basicAuthCacheSeconds: number;
  /** Seconds a process serves its cached plan catalogue before checking the plans table again (0 = every request). */
  planCacheSeconds: number;
  /**
   * Milliseconds a process trusts the access version it last read for a user before reading it
   * again (0 = every request): the bound within which a change made elsewhere (another process,
   * the CLI, SQL) stops access here. Changes made through this process act at once.
   */
  accessRecheckMs: number;
  /**
   * Bytes of memory per process for the last answers of the polled customer reads (0: none);
   * an answer is sent again only while the rows it was read from are unchanged.
   */
  answerCacheBytes: number;
  maxBodyBytes: number;
  /** Invalid notifications one source may have stored per minute; beyond, answered but not logged. */
  webhookInvalidPerMinute: number;
  /** Bearer token GET /metrics requires; null: the endpoint is off (404). */
  metricsToken: string | null;
  /** How often a scrape may re-run the wallet check (it reads every ledger). */
  metricsWalletVerifySeconds: number;
  logRequests: boolean;
  /** LOG_LEVEL: the least severe log line written (the request lines are info). */
  logLevel: LogLevel;
  /** The seller on invoice and credit-note PDFs, and how their amounts and dates read. */
  documents: DocumentSettings;
  /** The seller's PPN registration (docs/tax.md, 'Settings'). */
  tax: TaxSettings;
  /** Worker threads that render PDFs off the event loop (default: the cores less one, from 1 to 2). */
  pdfWorkers: number;
  /**
   * Exact origins (`https://app.example.com`) whose browser pages may call the API with
   * credentials (CORS_ORIGINS); empty: no CORS headers at all.
   */
  corsOrigins: string[];
  /** Hosted checkout and portal pages and the links to them. */
  hosted: HostedSettings;
}

export interface HostedSettings {
  /**
   * The origin customers reach this server at (PUBLIC_URL), the only one hosted links are made
   * on (never a request's Host header). Required in production; null elsewhere: the server's
   * own listening address.
   */
  publicUrl: string | null;
  /**
   * How long a checkout link opens, from any browser, any number of times
   * (HOSTED_CHECKOUT_TTL_MINUTES, default 1,440); a payment shown on the page that lives
   * longer keeps the link open until it expires.
   */
  checkoutTtlMinutes: number;
  /**
   * Origins the hosted pages may send a customer back to (HOSTED_RETURN_ORIGINS); empty: this
   * server's own only.
   */
  returnOrigins: string[];
  /**
   * Midtrans's Client Key (MIDTRANS_CLIENT_KEY), which the card form's tokenization script
   * needs; null: the hosted checkout offers no card (except with the development simulator).
   */
  clientKey: string | null;
}

export interface DocumentSettings {
  companyName: string;
  /** Lines of the postal address (BILLING_COMPANY_ADDRESS, lines separated by `\n` or `|`). */
  companyAddress: string[];
  taxId: string;
  /** Absolute path of a PNG or JPEG logo; null: the company name is drawn as a wordmark. */
  logoPath: string | null;
  /** BCP 47 locale of amounts and dates (`id-ID` reads `Rp 150.000`). */
  locale: string;
  /** IANA time zone the dates on a document are given in. */
  timeZone: string;
}

export interface TaxSettings {
  /** A registered taxable entrepreneur charges PPN on taxable plans and exports fakturs (BILLING_PKP). */
  pkp: boolean;
  /** The seller's NPWP, 16 digits (BILLING_TAX_ID); null when not a PKP and not given. */
  sellerTaxId: string | null;
  /** The seller's NITKU, 22 digits (BILLING_SELLER_NITKU). */
  sellerNitku: string | null;
}

/** The development key the simulator and the service share when no key is configured. */
export const DEVELOPMENT_SERVER_KEY = 'SB-Mid-server-LOCAL-SIMULATOR-KEY';

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

function list(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

function integer(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  return Number(raw);
}

function atMost(value: number, max: number, name: string): number {
  if (value > max) throw new ConfigError(`${name} must be at most ${max}, got ${value}`);
  return value;
}

function positive(value: number, name: string): number {
  if (value < 1) throw new ConfigError(`${name} must be at least 1, got ${value}`);
  return value;
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}

function amount(env: Env, name: string, fallback: string): string {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+(\.\d{1,2})?$/.test(raw)) throw new ConfigError(`${name} must be a decimal amount, got "${raw}"`);
  return raw;
}

/** The default database: a SQLite file under the project root, wherever the process was started. */
export const DEFAULT_DATABASE_URL = 'sqlite:./data/billing.sqlite';

/**
 * A development session secret that survives restarts, so that logins outlive a restart
 * without anyone having to configure one. Kept beside the SQLite file it belongs with; called
 * by the app once its database is open, so that it never makes a folder of its own.
 */
export function developmentSessionSecret(databaseUrl: string): string {
  const path = databaseUrl.startsWith('sqlite:') && !databaseUrl.includes(':memory:')
    ? join(dirname(databaseUrl.slice('sqlite:'.length)), '.session-secret')
    : null;
  if (path && existsSync(path)) return readFileSync(path, 'utf8').trim();
  const secret = randomBytes(32).toString('hex');
  if (path && existsSync(dirname(path))) writeFileSync(path, secret, { mode: 0o600 });
  return secret;
}

/**
 * Checks DATABASE_URL's form (a malformed one is a configuration error, exit 2) and resolves a
 * relative SQLite path from the project root, so that the CLI run from a subfolder and the
 * server open the same file.
 */
export function normaliseDatabaseUrl(url: string, env: Env = process.env): string {
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length);
    if (path === '') throw new ConfigError('DATABASE_URL sqlite: needs a path (sqlite:./data/billing.sqlite) or :memory:');
    if (path === ':memory:') return url;
    return `sqlite:${isAbsolute(path) ? path : resolve(PROJECT_ROOT, path)}`;
  }
  if (!/^postgres(ql)?:\/\//.test(url)) throw new ConfigError('DATABASE_URL must start with sqlite: or postgres://');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ConfigError('DATABASE_URL is not a valid postgres:// URL (postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE)');
  }
  if (parsed.hostname === '') throw new ConfigError('DATABASE_URL names no host (postgres://USER@HOST[:PORT]/DATABASE)');
  const database = decodeURIComponent(parsed.pathname.replace(/^\//, ''));
  if (database === '' || database.includes('/')) {
    throw new ConfigError('DATABASE_URL names no database (postgres://USER@HOST[:PORT]/DATABASE)');
  }
  // An unknown sslmode (or PGSSLMODE), a missing certificate file: refused before anything connects.
  const ssl = sslSettingsOf(url, env);
  if ('problem' in ssl) throw new ConfigError(ssl.problem);
  return url;
}

/** Reads `.env` (when present) into `process.env` without overriding what is already set. */
export function loadDotEnv(path = '.env'): void {
  if (!existsSync(path)) return;
  for (const line of readFileSync(path, 'utf8').split(/\r?\n/)) {
    const match = /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/.exec(line);
    if (!match || line.trimStart().startsWith('#')) continue;
    const [, key, rawValue] = match;
    const value = rawValue.replace(/^(['"])(.*)\1$/, '$2');
    if (process.env[key] === undefined) process.env[key] = value;
  }
}

function logLevel(raw: string | undefined): LogLevel {
  if (raw === undefined || raw === '') return 'info';
  const level = raw.toLowerCase();
  if ((LOG_LEVELS as readonly string[]).includes(level)) return level as LogLevel;
  throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${raw}"`);
}

function simulatorThreeDs(raw: string | undefined): Config['simulator']['threeDs'] {
  if (raw === undefined || raw === '') return 'test_tokens_skip';
  if (raw === 'when_asked' || raw === 'test_tokens_skip') return raw;
  throw new ConfigError(`SIMULATOR_3DS must be when_asked or test_tokens_skip, got "${raw}"`);
}

/**
 * Checked when the configuration loads, so that a mistyped locale, time zone or logo path stops
 * the start (exit 2) instead of breaking the first receipt hours later.
 */
function documentSettings(env: Env): DocumentSettings {
  const locale = env.BILLING_LOCALE || 'id-ID';
  let supported: string[];
  try {
    supported = Intl.NumberFormat.supportedLocalesOf([locale]);
  } catch {
    supported = [];
  }
  if (supported.length === 0) throw new ConfigError(`BILLING_LOCALE must be a locale this Node.js knows (id-ID, en-US), got "${locale}"`);
  const timeZone = env.BILLING_TIMEZONE || 'Asia/Jakarta';
  try {
    new Intl.DateTimeFormat('en', { timeZone });
  } catch {
    throw new ConfigError(`BILLING_TIMEZONE must be an IANA time zone (Asia/Jakarta), got "${timeZone}"`);
  }
  let logoPath: string | null = null;
  if (env.BILLING_LOGO_PATH) {
    logoPath = resolve(PROJECT_ROOT, env.BILLING_LOGO_PATH);
    if (!/\.(png|jpe?g)$/i.test(logoPath)) throw new ConfigError(`BILLING_LOGO_PATH must name a PNG or JPEG file, got "${env.BILLING_LOGO_PATH}"`);
    if (!existsSync(logoPath)) throw new ConfigError(`BILLING_LOGO_PATH names no file: ${logoPath}`);
  }
  return {
    companyName: (env.BILLING_COMPANY_NAME || 'Billing Service').trim(),
    companyAddress: (env.BILLING_COMPANY_ADDRESS ?? '')
      .split(/\\n|\n|\|/)
      .map((l) => l.trim())
      .filter((l) => l !== ''),
    taxId: (env.BILLING_TAX_ID ?? '').trim(),
    logoPath,
    locale: supported[0],
    timeZone,
  };
}

/** A PKP cannot invoice without its NPWP and NITKU: refuse to start rather than issue fakturs without a seller. */
function taxSettings(env: Env): TaxSettings {
  const pkp = bool(env, 'BILLING_PKP', false);
  const rawId = (env.BILLING_TAX_ID ?? '').trim();
  const rawNitku = (env.BILLING_SELLER_NITKU ?? '').trim();
  const sellerTaxId = rawId ? normaliseNpwp(rawId) : null;
  const sellerNitku = rawNitku ? normaliseNitku(rawNitku) : null;
  if (pkp) {
    const missing: string[] = [];
    if (!sellerTaxId) missing.push(rawId ? `BILLING_TAX_ID must be a 16-digit NPWP (or 15 of the old format), got "${rawId}"` : 'BILLING_TAX_ID (the seller\'s 16-digit NPWP) is required when BILLING_PKP=true');
    if (!sellerNitku) missing.push(rawNitku ? `BILLING_SELLER_NITKU must have 22 digits, got "${rawNitku}"` : 'BILLING_SELLER_NITKU (the seller\'s 22-digit NITKU) is required when BILLING_PKP=true');
    else if (sellerTaxId && !sellerNitku.startsWith(sellerTaxId)) missing.push('BILLING_SELLER_NITKU must start with the NPWP of BILLING_TAX_ID');
    if (missing.length > 0) throw new ConfigError(missing.join('; '));
  }
  return { pkp, sellerTaxId, sellerNitku };
}

/**
 * CORS_ORIGINS: comma-separated origins, each a scheme, a host and maybe a port, as a browser
 * sends them in `Origin`. NOTE: `*` (and any pattern) is refused: the API authenticates with
 * cookies, so a browser may send them only to origins named one by one.
 */
function corsOrigins(raw: string | undefined): string[] {
  return originList('CORS_ORIGINS', raw, 'the API uses cookies');
}

/** HOSTED_RETURN_ORIGINS and CORS_ORIGINS: exact origins, named one by one. */
function originList(name: string, raw: string | undefined, whyNoWildcard: string): string[] {
  const origins: string[] = [];
  const refused: string[] = [];
  for (const entry of list(raw)) {
    const why = entry.includes('*') ? `a wildcard; name each origin (${whyNoWildcard})` : originProblem(entry);
    if (why) refused.push(`"${entry}" is ${why}`);
    else origins.push(new URL(entry).origin);
  }
  if (refused.length > 0) throw new ConfigError(`${name} must be comma-separated origins like https://app.example.com: ${refused.join('; ')}`);
  return [...new Set(origins)];
}

/** PUBLIC_URL: an origin, as https://billing.example.com (a trailing slash is allowed). */
function publicUrl(raw: string): string {
  const entry = raw.trim().replace(/\/$/, '');
  const why = originProblem(entry);
  if (why) throw new ConfigError(`PUBLIC_URL must be the origin customers reach this server at, like https://billing.example.com: "${raw}" is ${why}`);
  return new URL(entry).origin;
}

function originProblem(entry: string): string | null {
  let url: URL;
  try {
    url = new URL(entry);
  } catch {
    return 'not a URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'not an http: or https: origin';
  if (url.username || url.password) return 'carrying a user name; an origin has none';
  // `new URL` reads a bare origin with the path "/": only the text itself tells a trailing slash.
  if (url.pathname !== '/' || entry.endsWith('/')) return `carrying a path (${url.pathname}); an origin has none`;
  if (url.search || url.hash || /[?#]/.test(entry)) return 'carrying a query or fragment; an origin has none';
  return null;
}

export function loadConfig(env: Env = process.env, overrides: Partial<Config> = {}): Config {
  const nodeEnv = env.NODE_ENV === 'production' ? 'production' : env.NODE_ENV === 'test' ? 'test' : 'development';
  const databaseUrl = normaliseDatabaseUrl(env.DATABASE_URL || DEFAULT_DATABASE_URL, env);
  const gatewayBaseUrl = env.GATEWAY_BASE_URL ? env.GATEWAY_BASE_URL.replace(/\/+$/, '') : null;
  const serverKey = env.GATEWAY_SERVER_KEY || '';
  const sessionSecrets = list(env.SESSION_SECRET);

  if (nodeEnv === 'production') {
    // Every missing setting at once: an operator fixing them one start at a time loses minutes each.
    const missing = [
      ...(serverKey ? [] : ['GATEWAY_SERVER_KEY']),
      ...(sessionSecrets.length > 0 ? [] : ['SESSION_SECRET']),
      ...(gatewayBaseUrl ? [] : ['GATEWAY_BASE_URL (the simulator is never mounted in production)']),
      ...(env.PUBLIC_URL ? [] : ['PUBLIC_URL (the origin hosted checkout and portal links are made on)']),
    ];
    if (missing.length > 0) throw new ConfigError(`required in production and not set: ${missing.join(', ')}`);
  }
  if (gatewayBaseUrl && !serverKey) {
    throw new ConfigError('GATEWAY_SERVER_KEY is required when GATEWAY_BASE_URL is set');
  }

  const dunning = list(env.DUNNING_RETRY_DAYS ?? '1,3,7').map((d) => {
    if (!/^\d+$/.test(d)) throw new ConfigError(`DUNNING_RETRY_DAYS must be comma-separated whole days, got "${d}"`);
    return Number(d);
  });

  const config: Config = {
    env: nodeEnv,
    host: env.HOST || '127.0.0.1',
    port: integer(env, 'PORT', 3000),
    databaseUrl,
    sqliteBusyTimeoutMs: integer(env, 'SQLITE_BUSY_TIMEOUT_MS', 30_000),
    databasePoolMax: atMost(positive(integer(env, 'DATABASE_POOL_MAX', 10), 'DATABASE_POOL_MAX'), 1000, 'DATABASE_POOL_MAX'),
    migrateOnStart: bool(env, 'MIGRATE_ON_START', !env.DATABASE_URL),
    shutdownGraceSeconds: integer(env, 'SHUTDOWN_GRACE_SECONDS', 10),
    gateway: {
      baseUrl: gatewayBaseUrl,
      serverKey: serverKey || DEVELOPMENT_SERVER_KEY,
      notificationUrl: env.GATEWAY_NOTIFICATION_URL || null,
      // NOTE: no shorter than Midtrans' own clients wait (midtrans-go: 80 s; the Node client: no
      // limit): a charge given up early is one whose outcome we do not know (docs/gateway.md,
      // 'Charges whose outcome is unknown').
      timeoutMs: integer(env, 'GATEWAY_TIMEOUT_MS', 80_000),
    },
    simulator: {
      threeDs: simulatorThreeDs(env.SIMULATOR_3DS),
      notificationRetryMs: env.SIMULATOR_NOTIFICATION_RETRY_MS
        ? list(env.SIMULATOR_NOTIFICATION_RETRY_MS).map((d) => {
            if (!/^\d+$/.test(d)) throw new ConfigError(`SIMULATOR_NOTIFICATION_RETRY_MS must be comma-separated milliseconds, got "${d}"`);
            return Number(d);
          })
        : null,
      refundConfirmationMs: integer(env, 'SIMULATOR_REFUND_CONFIRMATION_MS', 60_000),
    },
    subscriptionSettings: {
      PROTECTED_PATHS: list(env.SUBSCRIPTION_PROTECTED_PATHS),
      SUBSCRIPTION_REQUIRED_REDIRECT: env.SUBSCRIPTION_REQUIRED_REDIRECT || '/subscribe/',
    },
    sessionSecrets,
    secureCookies: bool(env, 'SECURE_COOKIES', false),
    trustProxy: bool(env, 'TRUST_PROXY', false),
    topupMinAmount: amount(env, 'TOPUP_MIN_AMOUNT', '10000'),
    topupMaxAmount: amount(env, 'TOPUP_MAX_AMOUNT', '50000000'),
    walletCurrency: (env.WALLET_CURRENCY || 'IDR').toUpperCase(),
    renewalDueDays: integer(env, 'RENEWAL_DUE_DAYS', 3),
    // The card dispute window: a chargeback may come that late (docs/gateway.md, 'Chargebacks').
    reconcileLookbackDays: integer(env, 'RECONCILE_LOOKBACK_DAYS', 120),
    dunningRetryDays: dunning,
    billingSchedulerIntervalSeconds: integer(env, 'BILLING_SCHEDULER_INTERVAL', 60),
    accessGraceMinutes: integer(env, 'ACCESS_GRACE_MINUTES', 60),
    // Unset, as long as the access grace: a shorter access grace is not lengthened by default.
    usageGraceMinutes: integer(env, 'USAGE_GRACE_MINUTES', integer(env, 'ACCESS_GRACE_MINUTES', 60)),
    deliveryIntervalSeconds: integer(env, 'DELIVERY_INTERVAL_SECONDS', 10),
    smtpUrl: env.SMTP_URL || null,
    mailFrom: env.MAIL_FROM || 'billing@localhost',
    outboundWebhookUrl: env.OUTBOUND_WEBHOOK_URL || null,
    outboundWebhookSecret: env.OUTBOUND_WEBHOOK_SECRET || null,
    outboundWebhookTimeoutMs: integer(env, 'OUTBOUND_WEBHOOK_TIMEOUT_MS', 10_000),
    loginThrottleLimit: integer(env, 'LOGIN_THROTTLE_LIMIT', 5),
    loginThrottleWindowSeconds: integer(env, 'LOGIN_THROTTLE_WINDOW_SECONDS', 300),
    basicAuthCacheSeconds: integer(env, 'BASIC_AUTH_CACHE_SECONDS', 60),
    planCacheSeconds: integer(env, 'PLAN_CACHE_SECONDS', 1),
    accessRecheckMs: integer(env, 'ACCESS_RECHECK_MS', 1000),
    answerCacheBytes: atMost(integer(env, 'ANSWER_CACHE_MB', 32), 1_048_576, 'ANSWER_CACHE_MB') * 1_048_576,
    maxBodyBytes: integer(env, 'MAX_BODY_BYTES', 1_048_576),
    webhookInvalidPerMinute: integer(env, 'WEBHOOK_INVALID_PER_MINUTE', 60),
    metricsToken: env.METRICS_TOKEN || null,
    metricsWalletVerifySeconds: integer(env, 'METRICS_WALLET_VERIFY_SECONDS', 300),
    logRequests: bool(env, 'LOG_REQUESTS', nodeEnv !== 'test'),
    logLevel: logLevel(env.LOG_LEVEL),
    documents: documentSettings(env),
    tax: taxSettings(env),
    // One core is left to the event loop (on two cores, one thread), so that a flood of
    // documents never takes the cores the other requests need.
    pdfWorkers: positive(integer(env, 'PDF_WORKERS', Math.max(1, Math.min(2, availableParallelism() - 1))), 'PDF_WORKERS'),
    corsOrigins: corsOrigins(env.CORS_ORIGINS),
    hosted: {
      publicUrl: env.PUBLIC_URL ? publicUrl(env.PUBLIC_URL) : null,
      checkoutTtlMinutes: positive(integer(env, 'HOSTED_CHECKOUT_TTL_MINUTES', 1440), 'HOSTED_CHECKOUT_TTL_MINUTES'),
      returnOrigins: originList('HOSTED_RETURN_ORIGINS', env.HOSTED_RETURN_ORIGINS, 'a customer is sent back only where the shop is'),
      clientKey: env.MIDTRANS_CLIENT_KEY || null,
    },
    ...overrides,
  };
  return config;
}

/** What `npm start` prints and logs may show: the configuration with every secret removed. */
export function describeConfig(config: Config): Record<string, unknown> {
  return {
    env: config.env,
    listen: `${config.host}:${config.port}`,
    // The password, in the authority or as a `password=` parameter (libpq reads both).
    database: config.databaseUrl.replace(/\/\/([^:@/]+)(:[^@/]*)?@/, '//$1:***@').replace(/([?&]password=)[^&#]*/gi, '$1***'),
    gateway: config.gateway.baseUrl ?? 'built-in simulator',
  };
}
