/** Structured one-line JSON logs on stderr. Callers never pass secrets; see src/config.ts describeConfig. */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

function write(level: string, message: string, fields?: Record<string, unknown>): void {
  process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), level, message, ...fields })}\n`);
}

export const consoleLogger: Logger = {
  info: (m, f) => write('info', m, f),
  warn: (m, f) => write('warn', m, f),
  error: (m, f) => write('error', m, f),
};

/** Drops info lines (tests), keeps warnings and errors. */
export const quietLogger: Logger = {
  info: () => undefined,
  warn: (m, f) => write('warn', m, f),
  error: (m, f) => write('error', m, f),
};
