import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { loadConfig, type Config } from '../../src/config.js';
import { DeliveryAttempt } from '../../src/db/entities/delivery-attempt.js';
import { Notification, type NotificationType } from '../../src/db/entities/notification.js';
import { User } from '../../src/db/entities/user.js';
import { migrateUp, openOrm, type Orm } from '../../src/db/orm.js';
import { ManualClock, type Clock } from '../../src/domain/clock.js';
import { closeDeliveryChannels, createDeliveryChannels, type DeliveryChannels } from '../../src/services/delivery/channels.js';
import { deliverDueNotifications, type DeliveryContext, type DeliveryReport } from '../../src/services/delivery/deliver-due-notifications.js';
import { notify } from '../../src/services/notifications/notify.js';
import { createTestDatabase, type DatabaseKind, type TestDatabase } from './database.js';
import { makeUser } from './factories.js';
import { startTestServer, type TestServer } from './server.js';

// ---------------------------------------------------------------- SMTP

export interface CapturedMail {
  from: string;
  to: string[];
  subject: string;
  text: string;
  html: string;
  headers: Record<string, string>;
  /** Attached files (receipts carry their invoice or credit note as PDF). */
  attachments: { filename: string; contentType: string; content: Buffer }[];
}

/** accept: 250 for everything; reject: 550 on RCPT TO (permanent); defer: 451 on RCPT TO (temporary). */
export type SmtpBehaviour = 'accept' | 'reject' | 'defer';

export interface SmtpCapture {
  url: string;
  messages: CapturedMail[];
  behaviour: SmtpBehaviour;
  stop(): Promise<void>;
}

function decodeWords(value: string): string {
  return value.replace(/=\?([^?]+)\?([QqBb])\?([^?]*)\?=\s*/g, (_m, _charset, enc: string, text: string) =>
    enc.toUpperCase() === 'B'
      ? Buffer.from(text, 'base64').toString('utf8')
      : Buffer.from(text.replace(/_/g, ' ').replace(/=([0-9A-F]{2})/gi, (_x, h: string) => String.fromCharCode(parseInt(h, 16))), 'latin1').toString('utf8'),
  );
}

function parseHeaders(block: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const line of block.replace(/\r\n[ \t]+/g, ' ').split('\r\n')) {
    const at = line.indexOf(':');
    if (at > 0) headers[line.slice(0, at).trim().toLowerCase()] = line.slice(at + 1).trim();
  }
  return headers;
}

function decodeBody(body: string, encoding: string | undefined): string {
  if (/base64/i.test(encoding ?? '')) return Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8');
  if (/quoted-printable/i.test(encoding ?? '')) {
    const bytes = body.replace(/=\r\n/g, '').replace(/=([0-9A-F]{2})/gi, (_x, h: string) => String.fromCharCode(parseInt(h, 16)));
    return Buffer.from(bytes, 'latin1').toString('utf8');
  }
  return body;
}

function splitParts(body: string, contentType: string | undefined): string[] | null {
  const boundary = /boundary="?([^";]+)"?/i.exec(contentType ?? '')?.[1];
  return boundary ? body.split(`--${boundary}`).slice(1, -1).map((p) => p.replace(/^\r\n/, '')) : null;
}

/** Just enough MIME to read what nodemailer writes: multipart/alternative, inside multipart/mixed when a file is attached. */
export function parseMail(raw: string, from: string, to: string[]): CapturedMail {
  const split = raw.indexOf('\r\n\r\n');
  const headers = parseHeaders(raw.slice(0, split));
  const body = raw.slice(split + 4);
  const mail: CapturedMail = { from, to, subject: decodeWords(headers.subject ?? ''), text: '', html: '', headers, attachments: [] };
  const visit = (parts: string[]) => {
    for (const part of parts) {
      const at = part.indexOf('\r\n\r\n');
      const ph = parseHeaders(part.slice(0, at));
      const raw = part.slice(at + 4).replace(/\r\n$/, '');
      const nested = splitParts(raw, ph['content-type']);
      if (nested) {
        visit(nested);
        continue;
      }
      const filename = /filename="?([^";]+)"?/i.exec(ph['content-disposition'] ?? '')?.[1];
      if (filename) {
        const content = /base64/i.test(ph['content-transfer-encoding'] ?? '') ? Buffer.from(raw.replace(/\s+/g, ''), 'base64') : Buffer.from(raw, 'latin1');
        mail.attachments.push({ filename, contentType: (ph['content-type'] ?? '').split(';')[0].trim(), content });
        continue;
      }
      const content = decodeBody(raw, ph['content-transfer-encoding']);
      if (/text\/html/i.test(ph['content-type'] ?? '')) mail.html = content;
      else if (/text\/plain/i.test(ph['content-type'] ?? '')) mail.text = content;
    }
  };
  visit(
    splitParts(body, headers['content-type']) ?? [
      `content-type: ${headers['content-type']}\r\ncontent-transfer-encoding: ${headers['content-transfer-encoding'] ?? '7bit'}\r\n\r\n${body}`,
    ],
  );
  return mail;
}

/** A real SMTP server on an ephemeral port that keeps every message it accepts. */
export async function startSmtpCapture(behaviour: SmtpBehaviour = 'accept'): Promise<SmtpCapture> {
  const capture: SmtpCapture = { url: '', messages: [], behaviour, stop: async () => undefined };
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onRcptTo(_address, _session, callback) {
      if (capture.behaviour === 'accept') return callback();
      const err = new Error(capture.behaviour === 'reject' ? 'Mailbox unavailable' : 'Try again later') as Error & { responseCode: number };
      err.responseCode = capture.behaviour === 'reject' ? 550 : 451;
      return callback(err);
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const from = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
        capture.messages.push(parseMail(Buffer.concat(chunks).toString('utf8'), from, session.envelope.rcptTo.map((r) => r.address)));
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.server.address() as AddressInfo;
  capture.url = `smtp://127.0.0.1:${port}`;
  capture.stop = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return capture;
}

/** A port nothing listens on: connections to it are refused (a server that is down). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

// ---------------------------------------------------------------- HTTP receiver

export interface ReceivedPost {
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * ok: 200; fail: 500; hang: never answers; huge: `hugeStatus` with a 200 MB body streamed lazily
 * (so the test itself does not hold it); slow: 200 after `slowMs`.
 */
export type ReceiverBehaviour = 'ok' | 'fail' | 'hang' | 'huge' | 'slow';

export interface Receiver {
  url: string;
  posts: ReceivedPost[];
  behaviour: ReceiverBehaviour;
  hugeStatus: number;
  slowMs: number;
  /** Bytes of huge bodies the receiver managed to write before the client went away. */
  hugeBytesWritten: number;
  readonly hugeBytesTotal: number;
  stop(): Promise<void>;
}

export async function startReceiver(behaviour: ReceiverBehaviour = 'ok'): Promise<Receiver> {
  const HUGE = 200 * 1024 * 1024;
  const chunk = Buffer.alloc(64 * 1024, 'x');
  const receiver: Receiver = {
    url: '',
    posts: [],
    behaviour,
    hugeStatus: 500,
    slowMs: 50,
    hugeBytesWritten: 0,
    hugeBytesTotal: HUGE,
    stop: async () => undefined,
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      receiver.posts.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      switch (receiver.behaviour) {
        case 'ok':
          res.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}');
          return;
        case 'fail':
          res.writeHead(500, { 'content-type': 'text/plain' }).end('Internal Server Error: database is down');
          return;
        case 'slow':
          setTimeout(() => res.writeHead(200).end('ok'), receiver.slowMs);
          return;
        case 'hang':
          return; // never answers
        case 'huge': {
          res.writeHead(receiver.hugeStatus, { 'content-type': 'text/plain', 'content-length': String(HUGE) });
          let sent = 0;
          let gone = false;
          res.on('close', () => (gone = true));
          const pump = () => {
            while (!gone && sent < HUGE) {
              sent += chunk.length;
              receiver.hugeBytesWritten += chunk.length;
              if (!res.write(chunk)) return void res.once('drain', pump);
            }
            if (!gone) res.end();
          };
          pump();
          return;
        }
      }
    });
  });
  server.on('clientError', (_err, socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/billing`;
  receiver.stop = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return receiver;
}

// ---------------------------------------------------------------- database and entries

export interface DeliveryDb {
  db: TestDatabase;
  orm: Orm;
  close(): Promise<void>;
}

/** A fresh migrated database with its own ORM (no server): delivery is a background job. */
export async function openDeliveryDb(kind: DatabaseKind): Promise<DeliveryDb> {
  const db = await createTestDatabase(kind);
  const orm = await openOrm(db.url, { create: true });
  await migrateUp(orm);
  return {
    db,
    orm,
    async close() {
      await orm.close(true);
      await db.drop();
    },
  };
}

export function deliveryConfig(databaseUrl: string, env: Record<string, string> = {}): Config {
  return loadConfig({
    NODE_ENV: 'test',
    DATABASE_URL: databaseUrl,
    SESSION_SECRET: 'test-session-secret',
    MAIL_FROM: 'Billing <billing@example.test>',
    OUTBOUND_WEBHOOK_SECRET: 'whsec_test_secret',
    // Long enough for a local receiver on a loaded machine (two test files at once answered
    // late at 300 ms in CI); the test of a receiver that never answers sets its own short one.
    OUTBOUND_WEBHOOK_TIMEOUT_MS: '5000',
    ...env,
  });
}

/** Records an event the way the business code does: notify() inside a committed transaction. */
export async function recordEvent(orm: Orm, config: Config, clock: Clock, user: User, type: NotificationType, data: Record<string, unknown>): Promise<Notification[]> {
  return orm.em.fork().transactional(async (em) => notify({ em, config, clock }, await em.findOneOrFail(User, user.id), type, data));
}

/** Each test starts without entries left over from the one before (they would fall due as the clock moves). */
export async function clearEntries(orm: Orm): Promise<void> {
  const em = orm.em.fork();
  await em.nativeDelete(DeliveryAttempt, {});
  await em.nativeDelete(Notification, {});
}

export async function entry(orm: Orm, id: string): Promise<Notification> {
  return orm.em.fork().findOneOrFail(Notification, id);
}

export const PAYMENT_PENDING_DATA = {
  payment_id: '7d8f2f8e-2b7d-4a0e-9f59-3f0b1f1c0a11',
  order_id: 'SUB-8QZ1X2Y3',
  amount: '150000.00',
  currency: 'IDR',
  payment_type: 'bank_transfer',
  bank: 'bca',
  va_number: '12345678901',
  expiry_time: '2026-11-23T02:00:00.000Z',
};

export const MINUTE = 60_000;
export const HOUR = 60 * MINUTE;

// ---------------------------------------------------------------- one harness for the service tests

export interface DeliveryHarness {
  store: DeliveryDb;
  smtp: SmtpCapture;
  receiver: Receiver;
  clock: ManualClock;
  config: Config;
  channels: DeliveryChannels;
  /** A customer named Dewi (the emails greet her by name), made by the shared factory. */
  user(): Promise<User>;
  /** Switches configuration (and senders) for the current test. */
  configure(env: Record<string, string>): void;
  ctx(): DeliveryContext;
  deliver(): Promise<DeliveryReport>;
  attemptsOf(id: string): Promise<DeliveryAttempt[]>;
}

/**
 * A fresh database, a capturing SMTP server and an HTTP receiver for a describe block; after each
 * test the entries are cleared and the servers behave normally again.
 */
export function deliveryHarness(kind: DatabaseKind): DeliveryHarness {
  const h = { clock: new ManualClock(new Date('2026-11-22T10:00:00.000Z')) } as DeliveryHarness;
  h.configure = (env) => {
    if (h.channels) closeDeliveryChannels(h.channels);
    h.config = deliveryConfig(h.store.db.url, env);
    h.channels = createDeliveryChannels(h.config);
  };
  h.user = () => makeUser(h.store.orm.em.fork(), { firstName: 'Dewi', lastName: 'Lestari' });
  h.ctx = () => ({ em: h.store.orm.em.fork(), config: h.config, clock: h.clock, channels: h.channels });
  h.deliver = () => deliverDueNotifications(h.ctx());
  h.attemptsOf = (id) => h.store.orm.em.fork().find(DeliveryAttempt, { notification: id }, { orderBy: [{ attemptedAt: 'asc' }, { id: 'asc' }] });

  beforeAll(async () => {
    h.store = await openDeliveryDb(kind);
    h.smtp = await startSmtpCapture();
    h.receiver = await startReceiver();
    h.configure({ SMTP_URL: h.smtp.url, OUTBOUND_WEBHOOK_URL: h.receiver.url });
  });
  afterAll(async () => {
    if (h.channels) closeDeliveryChannels(h.channels);
    await h.smtp?.stop();
    await h.receiver?.stop();
    await h.store?.close();
  });
  afterEach(async () => {
    await clearEntries(h.store.orm);
    h.configure({ SMTP_URL: h.smtp.url, OUTBOUND_WEBHOOK_URL: h.receiver.url });
    h.smtp.behaviour = 'accept';
    h.smtp.messages.length = 0;
    h.receiver.behaviour = 'ok';
    h.receiver.hugeStatus = 500;
    h.receiver.hugeBytesWritten = 0;
    h.receiver.posts.length = 0;
  });
  return h;
}

// ---------------------------------------------------------------- a running server that delivers

/** A running server and where its notifications go; all three set by the hooks of serverDeliveringTo. */
export interface DeliveringServer {
  server: TestServer;
  smtp: SmtpCapture;
  receiver: Receiver;
}

/**
 * For a describe block: a capturing SMTP server, an HTTP receiver, and the real server sending
 * its emails and outbound webhooks to them (`env` adds to or overrides its configuration);
 * all three stopped afterwards. Read the fields inside hooks and tests, not at once.
 */
export function serverDeliveringTo(kind: DatabaseKind, env: Record<string, string> = {}): DeliveringServer {
  const d = {} as DeliveringServer;
  beforeAll(async () => {
    d.smtp = await startSmtpCapture();
    d.receiver = await startReceiver();
    d.server = await startTestServer(kind, { env: { SMTP_URL: d.smtp.url, OUTBOUND_WEBHOOK_URL: d.receiver.url, ...env } });
  });
  afterAll(async () => {
    await d.server?.stop();
    await d.smtp?.stop();
    await d.receiver?.stop();
  });
  return d;
}
