import type { Command } from 'commander';
import { stringify } from 'csv-stringify/sync';
import { ConfigError, loadConfig, loadDotEnv, type Config } from '../src/config.js';
import { assertSchemaCurrent, openOrm, type Orm } from '../src/db/orm.js';
import { systemClock } from '../src/domain/clock.js';
import { MidtransClient } from '../src/gateway/midtrans-client.js';
import { API_ROOT } from '../src/http/api.js';
import type { ServiceContext } from '../src/services/context.js';
import { classifyFailure, EXIT, exitStatusFor } from '../src/services/common/classify-failure.js';

export { EXIT };

export class CliFailure extends Error {
  constructor(message: string, readonly exitCode: number) {
    super(message);
  }
}

/** The exit status and message of a failure: the CLI's own refusals, else the shared classification. */
export function exitCodeFor(err: unknown): { code: number; message: string } {
  if (err instanceof CliFailure) return { code: err.exitCode, message: err.message };
  return exitStatusFor(err);
}

/**
 * A failure as `--json` prints it: the error's stable code (the API's codes; `usage_error` for
 * the CLI's own refusals and bad configuration, `internal_error` for a bug) and the message.
 */
export function failureJson(err: unknown, message: string): { error: { code: string; message: string } } {
  if (err instanceof CliFailure) return { error: { code: err.exitCode === EXIT.usage ? 'usage_error' : 'failed', message } };
  if (err instanceof ConfigError) return { error: { code: 'usage_error', message } };
  return { error: { code: classifyFailure(err)?.code ?? 'internal_error', message } };
}

export interface GlobalOptions {
  json?: boolean;
}

/** Prints a result: JSON on stdout with --json, otherwise the human form on stdout. */
/** Whether this command has already printed its one JSON document (a failure after it prints none). */
export let jsonPrinted = false;

export function output(opts: GlobalOptions, json: unknown, human: () => string): void {
  if (opts.json) jsonPrinted = true;
  if (opts.json) process.stdout.write(`${JSON.stringify(json, null, 2)}\n`);
  else process.stdout.write(`${human()}\n`);
}

/**
 * Prints rows as CSV on stdout, a header row of `columns` first. csv-stringify does the quoting
 * (commas, quotes and line breaks in a value); an object is written as its JSON, a boolean as
 * true/false, a missing value as an empty field.
 */
export function csvOutput(rows: Record<string, unknown>[], columns: string[]): void {
  process.stdout.write(
    stringify(rows, {
      header: true,
      columns,
      cast: { boolean: (v) => String(v), object: (v) => JSON.stringify(v), date: (v) => v.toISOString() },
    }),
  );
}

/** Progress and notes: stderr, so that --json output on stdout stays one clean document. */
export function note(message: string): void {
  process.stderr.write(`${message}\n`);
}

export function table(rows: Record<string, unknown>[], columns: string[]): string {
  if (rows.length === 0) return '(none)';
  const cells = rows.map((r) => columns.map((c) => (r[c] === null || r[c] === undefined ? '' : String(r[c]))));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i].length)));
  const line = (values: string[]) => values.map((v, i) => v.padEnd(widths[i])).join('  ').trimEnd();
  return [line(columns), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n');
}

export function globalOptions(cmd: Command): GlobalOptions {
  return cmd.optsWithGlobals() as GlobalOptions;
}

export function cliConfig(): Config {
  loadDotEnv();
  return loadConfig();
}

/** Base URL of the running server (for commands that talk to it, like `simulate`). */
export function serverUrl(config: Config): string {
  return process.env.BILLING_URL?.replace(/\/+$/, '') ?? `http://${config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${config.port}`;
}

export function gatewayFor(config: Config): MidtransClient {
  return new MidtransClient({
    baseUrl: config.gateway.baseUrl ?? `${serverUrl(config)}/_simulator`,
    serverKey: config.gateway.serverKey,
    timeoutMs: config.gateway.timeoutMs,
  });
}

/**
 * Opens the configured database for a command: never creates it (only `db migrate` does), and
 * refuses an unreachable one or one whose schema is behind this build.
 */
export async function openDatabase(config: Config, opts: { create?: boolean; requireCurrentSchema?: boolean } = {}): Promise<Orm> {
  const orm = await openOrm(config.databaseUrl, { create: opts.create ?? false, busyTimeoutMs: config.sqliteBusyTimeoutMs });
  if (opts.requireCurrentSchema ?? true) {
    try {
      await assertSchemaCurrent(orm);
    } catch (err) {
      await orm.close(true);
      throw err;
    }
  }
  return orm;
}

/**
 * Runs a command body with an open database and a forked entity manager, closing it afterwards.
 * Failures are printed and turned into the exit status.
 */
export async function withServices<T>(run: (services: ServiceContext, orm: Orm) => Promise<T>): Promise<T> {
  const config = cliConfig();
  const orm = await openDatabase(config);
  try {
    return await run({ em: orm.em.fork(), config, gateway: gatewayFor(config), clock: systemClock }, orm);
  } finally {
    await orm.close(true);
  }
}

export { API_ROOT };
