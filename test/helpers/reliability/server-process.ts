import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/*
 * The real server as a separate process (`node --import tsx src/main.ts`), configured only by its
 * environment, as an operator runs it. Nothing is shared with the test process but the database.
 */

export const PROJECT_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const API = '/api/subscriptions';
export const TEST_SERVER_KEY = 'SB-Mid-server-RELIABILITY-7f3c2a91d4e8';
export const TEST_SESSION_SECRET = 'reliability-session-secret-5b9e1c';

export interface ServerProcess {
  /** http://127.0.0.1:PORT */
  url: string;
  child: ChildProcess;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  /** Resolves with the exit code (or signal) once the process has ended. */
  exited: Promise<number | string>;
  /** SIGKILL: no shutdown code runs, as in a crash or an OOM kill. */
  kill(): Promise<void>;
  /** SIGTERM and wait (graceful stop). */
  stop(): Promise<void>;
}

export interface ServerProcessOptions {
  databaseUrl: string;
  env?: Record<string, string>;
}

/** The environment every spawned server (and CLI run) of these tests shares. */
export function baseEnv(databaseUrl: string): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    NODE_ENV: 'test',
    HOST: '127.0.0.1',
    DATABASE_URL: databaseUrl,
    SESSION_SECRET: TEST_SESSION_SECRET,
    GATEWAY_SERVER_KEY: TEST_SERVER_KEY,
    LOG_REQUESTS: 'false',
    // No in-server billing pass unless a test asks for one (the default is every 60 s).
    BILLING_SCHEDULER_INTERVAL: '0',
  };
}

/**
 * Starts the server on a free port (PORT=0: the kernel picks it, the start-up banner tells it)
 * and resolves once it listens.
 */
export async function startServerProcess(opts: ServerProcessOptions): Promise<ServerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: PROJECT_ROOT,
    env: { ...baseEnv(opts.databaseUrl), PORT: '0', MIGRATE_ON_START: 'true', ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));

  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start within 60 s:\n${output}`)), 60_000);
    const onData = () => {
      const match = /listening on (http:\/\/[^\s/]+)\//.exec(output);
      if (match) {
        clearTimeout(timer);
        child.stdout!.off('data', onData);
        resolve(match[1]);
      }
    };
    child.stdout!.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${code}) before listening:\n${output}`));
    });
  });

  const end = async (signal: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    // A graceful stop that hangs must not hang the suite.
    const hung = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(hung);
  };
  return { url, child, output: () => output, exited, kill: () => end('SIGKILL'), stop: () => end('SIGTERM') };
}

export interface HttpAnswer<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface CallOptions {
  body?: unknown;
  /** Sent as is, with the given content type (default application/json). */
  rawBody?: string;
  basic?: { username: string; password: string };
  cookie?: string;
  headers?: Record<string, string>;
}

/** One HTTP call; network failures reject (a killed server, a cut connection). */
export async function call<T = any>(baseUrl: string, method: string, path: string, opts: CallOptions = {}): Promise<HttpAnswer<T>> {
  const headers: Record<string, string> = { ...opts.headers };
  let body: string | undefined = opts.rawBody;
  if (body === undefined && opts.body !== undefined) body = JSON.stringify(opts.body);
  if (body !== undefined) headers['content-type'] ??= 'application/json';
  if (opts.basic) headers.authorization = `Basic ${Buffer.from(`${opts.basic.username}:${opts.basic.password}`).toString('base64')}`;
  if (opts.cookie) headers.cookie = opts.cookie;
  const res = await fetch(`${baseUrl}${path}`, { method, headers, body, redirect: 'manual', signal: AbortSignal.timeout(30_000) });
  const answer = await readAnswer(res);
  return { status: res.status, headers: res.headers, body: answer.body as T, text: answer.text };
}

export interface AnswerContent {
  text: string;
  contentType: string | null;
  /** Parsed when the content type says JSON and there is a body; the text otherwise. */
  body: unknown;
  /** The content type says JSON but the body does not parse (body is then the text). */
  malformedJson: boolean;
}

/** Reads a fetch response's body once, the way every caller here judges it. */
export async function readAnswer(res: Response): Promise<AnswerContent> {
  const text = await res.text();
  const contentType = res.headers.get('content-type');
  if (!/json/.test(contentType ?? '') || text === '') return { text, contentType, body: text, malformedJson: false };
  try {
    return { text, contentType, body: JSON.parse(text), malformedJson: false };
  } catch {
    return { text, contentType, body: text, malformedJson: true };
  }
}

/** The session cookie (name=value pairs) a response sets. */
export function cookieOf(answer: HttpAnswer): string {
  return answer.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
}

/**
 * One HTTP call with the request target sent exactly as given. fetch() resolves `.` and `..`
 * segments (and `%2e%2e`) before sending, as a browser does; an attacker's client does not.
 */
export async function callRawPath<T = any>(baseUrl: string, method: string, rawPath: string, opts: CallOptions = {}): Promise<HttpAnswer<T>> {
  const { request } = await import('node:http');
  const url = new URL(baseUrl);
  const headers: Record<string, string> = { ...opts.headers };
  let body: string | undefined = opts.rawBody;
  if (body === undefined && opts.body !== undefined) body = JSON.stringify(opts.body);
  if (body !== undefined) {
    headers['content-type'] ??= 'application/json';
    headers['content-length'] = String(Buffer.byteLength(body));
  }
  if (opts.basic) headers.authorization = `Basic ${Buffer.from(`${opts.basic.username}:${opts.basic.password}`).toString('base64')}`;
  if (opts.cookie) headers.cookie = opts.cookie;
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, method, path: rawPath, headers, timeout: 30_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const responseHeaders = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) responseHeaders.set(k, Array.isArray(v) ? v.join(', ') : v);
        let parsed: unknown = text;
        if (/json/.test(responseHeaders.get('content-type') ?? '') && text !== '') {
          try {
            parsed = JSON.parse(text);
          } catch {
            parsed = text;
          }
        }
        resolve({ status: res.statusCode ?? 0, headers: responseHeaders, body: parsed as T, text });
      });
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end(body);
  });
}
