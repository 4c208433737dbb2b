import { ConfigError } from '../../config.js';
import { recogniseDatabaseFailure } from '../../db/database-failure.js';
import { classifyFailure as classifyWith, EXIT, exitStatusOf, operatorLine, type Failure } from '../../domain/failure.js';
import { recogniseGatewayFailure } from '../../gateway/errors.js';

/*
 * The domain's one classification (src/domain/failure.ts) given the adapters of the layers
 * below it, in the one place: HTTP (src/http/problem.ts), the CLI and the server's start all
 * call these two functions, so they cannot disagree. The gateway goes first: its connection
 * errors carry the same network codes as a database's.
 */

const RECOGNISERS = [recogniseGatewayFailure, recogniseDatabaseFailure] as const;

export { EXIT, type Failure };

/** Classifies anything thrown by a use case; null for an unexpected error (a bug: logged, 500, exit 70). */
export function classifyFailure(err: unknown): Failure | null {
  return classifyWith(err, RECOGNISERS);
}

/**
 * The exit status and the one line to print for a failure. Bad configuration is only ever
 * met at a process's start, so it is no error code: HTTP never sees it.
 */
export function exitStatusFor(err: unknown): { code: number; message: string } {
  if (err instanceof ConfigError) return { code: EXIT.usage, message: `configuration: ${err.message}` };
  const failure = classifyFailure(err);
  if (!failure) return { code: EXIT.internal, message: err instanceof Error ? err.message : String(err) };
  return { code: exitStatusOf(failure.code), message: operatorLine(failure) };
}
