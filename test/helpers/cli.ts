import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';

/** The package's bin: registers tsx and runs cli/main.ts. */
export const CLI_BIN = fileURLToPath(new URL('../../cli/billing-admin.js', import.meta.url));

/**
 * The CLI file the tests run: the bundle test/setup/cli-bundle.ts made for this run (the same
 * code, started without compiling TypeScript), or the bin when there is none.
 */
export function cliEntry(): string {
  return inject('cliBundle') || CLI_BIN;
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON (for --json runs). */
  json: any;
}

/** Runs `billing-admin` as a separate process, as an operator would. */
export function runCli(args: string[], env: Record<string, string>, stdin?: string, opts: { cwd?: string; entry?: string } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [opts.entry ?? cliEntry(), ...args], {
      cwd: opts.cwd,
      env: { PATH: process.env.PATH ?? '', NODE_ENV: 'test', LOG_REQUESTS: 'false', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => {
      let json: unknown = undefined;
      try {
        json = JSON.parse(stdout);
      } catch {
        // not JSON output
      }
      resolve({ code: code ?? -1, stdout, stderr, json });
    });
    child.stdin.end(stdin ?? '');
  });
}
