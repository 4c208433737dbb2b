import { pino, type Logger as Pino } from 'pino';

/**
 * Structured logs: one JSON object a line, `{"level", "time", …fields, "message"}`. Callers never
 * pass secrets (see src/config.ts describeConfig); the names below are cut out all the same,
 * should a caller ever pass a header or a password by mistake.
 */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** LOG_LEVEL (docs/configuration.md): the least severe level written; `silent` writes nothing. */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Field names never written as given, at the top of a line or under `headers`. */
const REDACTED = ['password', 'authorization', 'cookie', 'headers.authorization', 'headers.cookie', 'headers["set-cookie"]'];

export interface LoggerOptions {
  level?: LogLevel;
  /**
   * The server logs on stdout, with its start-up lines; the CLI on stderr (default), since its
   * stdout carries the command's result.
   */
  destination?: 'stdout' | 'stderr';
}

/**
 * pino, shaped like the lines this service always wrote (`level` as a word, `time` in ISO 8601,
 * `message`). Written synchronously: the last lines before `process.exit` are never lost.
 */
export function createLogger({ level = 'info', destination = 'stderr' }: LoggerOptions = {}): Logger {
  const log: Pino = pino(
    {
      level,
      base: undefined,
      messageKey: 'message',
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACTED, censor: '[redacted]' },
    },
    pino.destination({ dest: destination === 'stdout' ? 1 : 2, sync: true }),
  );
  return {
    info: (message, fields) => (fields ? log.info(fields, message) : log.info(message)),
    warn: (message, fields) => (fields ? log.warn(fields, message) : log.warn(message)),
    error: (message, fields) => (fields ? log.error(fields, message) : log.error(message)),
  };
}

let processLogger: Logger = createLogger();

/**
 * For code with no logger of its own (a use case run by the server or by the CLI): every level
 * on stderr, unless the entry point names the process's logger (the server's, on stdout).
 */
export const consoleLogger: Logger = {
  info: (message, fields) => processLogger.info(message, fields),
  warn: (message, fields) => processLogger.warn(message, fields),
  error: (message, fields) => processLogger.error(message, fields),
};

/** Makes `consoleLogger` write through `logger` (src/main.ts: the server's lines all on one stream). */
export function setProcessLogger(logger: Logger): void {
  processLogger = logger;
}

/** Drops info lines (tests), keeps warnings and errors. */
export const quietLogger: Logger = createLogger({ level: 'warn' });
