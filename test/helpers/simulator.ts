import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { MidtransClient, type MidtransClientOptions } from '../../src/gateway/index.js';
import { createSimulator, type Simulator, type SimulatorOptions } from '../../src/simulator/index.js';

export const SERVER_KEY = 'SB-Mid-server-TEST-simulator-key';

export interface ReceivedNotification {
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
  raw: string;
}

/** A stand-in merchant webhook: records every POST and answers with the next queued status (200 by default). */
export class NotificationReceiver {
  readonly received: ReceivedNotification[] = [];
  readonly statuses: number[] = [];
  #server!: Server;
  #waiters: (() => void)[] = [];
  url = '';

  async start(): Promise<this> {
    this.#server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        let body: Record<string, unknown> = {};
        try {
          body = JSON.parse(raw) as Record<string, unknown>;
        } catch {
          // kept as {} so a test can see the raw text
        }
        this.received.push({ headers: req.headers, body, raw });
        res.statusCode = this.statuses.shift() ?? 200;
        res.end('{}');
        for (const w of this.#waiters.splice(0)) w();
      });
    });
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/webhook`;
    return this;
  }

  for(orderId: string): ReceivedNotification[] {
    return this.received.filter((n) => n.body['order_id'] === orderId);
  }

  /** Waits until `predicate` holds over what was received, or fails after `ms`. */
  async waitFor(predicate: (all: ReceivedNotification[]) => boolean, ms = 3000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!predicate(this.received)) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`notification not received within ${ms} ms (got ${this.received.length})`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.min(left, 50));
        this.#waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  clear(): void {
    this.received.length = 0;
    this.statuses.length = 0;
  }

  async stop(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

export interface Harness {
  sim: Simulator;
  receiver: NotificationReceiver;
  /** e.g. http://127.0.0.1:1234 */
  origin: string;
  /** Core API base for the client: origin + /_simulator */
  baseUrl: string;
  client(overrides?: Partial<MidtransClientOptions>): MidtransClient;
  /** Raw HTTP against the simulator; `auth` false sends no Authorization. */
  request(method: string, path: string, opts?: { body?: string; auth?: string | false; headers?: Record<string, string> }): Promise<{ status: number; json: Record<string, unknown>; text: string }>;
  stop(): Promise<void>;
}

export function basic(key: string): string {
  return 'Basic ' + Buffer.from(`${key}:`).toString('base64');
}

/**
 * One harness for the whole test file (the object is filled in before its first test): no fault
 * and no queued receiver answers left over from the test before, stopped after the last.
 */
export function harnessForFile(): Harness {
  const h = {} as Harness;
  beforeAll(async () => {
    Object.assign(h, await startHarness());
  });
  afterAll(() => h.stop());
  beforeEach(() => {
    h.sim.setFault({ mode: 'none' });
    h.receiver.statuses.length = 0;
  });
  return h;
}

/** A bare Koa app with only the simulator, on an ephemeral port, plus a webhook receiver. */
export async function startHarness(simOpts: Partial<SimulatorOptions> = {}): Promise<Harness> {
  const receiver = await new NotificationReceiver().start();
  let origin = '';
  const sim = createSimulator({
    serverKey: SERVER_KEY,
    notificationUrl: () => receiver.url,
    publicBaseUrl: () => origin,
    retryDelaysMs: [20, 40, 60],
    chargeNotificationDelayMs: 0,
    ...simOpts,
  });
  const app = new Koa();
  app.use(sim.middleware);
  app.use((ctx) => {
    ctx.status = 418;
    ctx.body = 'not the simulator';
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const baseUrl = `${origin}/_simulator`;
  return {
    sim,
    receiver,
    origin,
    baseUrl,
    client: (overrides = {}) =>
      new MidtransClient({ baseUrl, serverKey: SERVER_KEY, timeoutMs: 2000, sleep: async () => undefined, ...overrides }),
    async request(method, path, opts = {}) {
      const headers: Record<string, string> = { Accept: 'application/json', 'Content-Type': 'application/json', ...opts.headers };
      if (opts.auth !== false) headers['Authorization'] = opts.auth ?? basic(SERVER_KEY);
      const res = await fetch(origin + path, { method, headers, body: opts.body });
      const text = await res.text();
      let json: Record<string, unknown> = {};
      try {
        json = JSON.parse(text) as Record<string, unknown>;
      } catch {
        // non-JSON answers are inspected through `text`
      }
      return { status: res.status, json, text };
    },
    async stop() {
      sim.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await receiver.stop();
    },
  };
}

let seq = 0;
/** Unique, valid order ids so tests never collide. */
export function orderId(prefix = 'T'): string {
  seq += 1;
  return `${prefix}-${Date.now().toString(36)}-${seq}`;
}

/** Polls until `cond` holds, or fails after `ms`. */
export async function until(cond: () => boolean, ms = 3000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Anything that can reach the simulator's control API over HTTP (a TestServer). */
interface SimulatorControl {
  request(method: string, path: string, options?: { body?: unknown }): Promise<{ status: number; body: any; text: string }>;
}

/**
 * The notification proxy: from now on the simulator keeps back the notifications of `orderId`
 * (of every order when omitted) until releaseNotifications sends them, in the order asked.
 */
export async function holdNotifications(server: SimulatorControl, orderId?: string): Promise<void> {
  const res = await server.request('POST', '/_simulator/notifications/hold', { body: orderId ? { order_id: orderId } : {} });
  if (res.status !== 200) throw new Error(`hold: ${res.status} ${res.text}`);
}

/** What the proxy holds now, oldest first. */
export async function heldNotifications(server: SimulatorControl): Promise<{ id: number; order_id: string; transaction_status: string }[]> {
  const res = await server.request('GET', '/_simulator/notifications/held');
  if (res.status !== 200) throw new Error(`held: ${res.status} ${res.text}`);
  return res.body.held;
}

/**
 * Sends the held notifications (of `order_id`, or all) newest first, oldest first, or exactly
 * `ids` in that order; each leaves once the one before has been answered. Returns them with
 * the webhook's answers.
 */
export async function releaseNotifications(
  server: SimulatorControl,
  request: { order?: 'newest_first' | 'oldest_first'; order_id?: string; ids?: number[]; drop?: boolean; keep_holding?: boolean } = {},
): Promise<{ id: number; order_id: string; transaction_status: string; outcomes: { http_status: number | null }[] }[]> {
  const res = await server.request('POST', '/_simulator/notifications/release', { body: request });
  if (res.status !== 200) throw new Error(`release: ${res.status} ${res.text}`);
  return res.body.released;
}
