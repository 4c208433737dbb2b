import { createHash } from 'node:crypto';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { DomainError } from '../../domain/errors.js';
import type { DocumentView } from './document-view.js';
import { RenderedDocumentCache } from './rendered-document-cache.js';
import { renderDocumentPdf } from './template.js';

/** Turns a document's view into PDF bytes. */
export type RenderPdf = (view: DocumentView) => Promise<Buffer>;

/** In the calling thread: for the CLI, which renders one document and exits. */
export const renderInProcess: RenderPdf = renderDocumentPdf;

/** Raised when a render is refused before it queues: the user's burst (429) or a full queue (503). */
export class RenderRefusedError extends DomainError {
  constructor(
    code: 'rate_limited' | 'service_unavailable',
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(code, message);
  }
}

export type RefusalReason = 'user_limit' | 'queue_full';

/** What the renderer reports (src/metrics/service-metrics.ts). */
export interface RenderObserver {
  documentRendered(): void;
  documentCacheHit(): void;
  documentRefused(reason: RefusalReason): void;
}

export interface RenderLimits {
  /** PDF requests of one user handled at once; beyond it, 429 before any work. */
  perUser: number;
  /** PDF requests of one user started within one second, cached answers included; beyond it, 429 before any work. */
  perUserPerSecond: number;
  /** Renders running or queued in all; beyond it, 503. */
  total: number;
  /** Bytes of rendered PDFs kept. */
  cacheBytes: number;
}

/**
 * NOTE: ten of a user's documents at once, or in one second, is more than a person opens by
 * hand, and a script fetching every invoice in turn is served at ten a second; the total lets
 * six such users queue behind the threads, a few seconds of rendering, before the rest are told
 * to come back. 32 MB holds about two thousand invoices.
 */
export const DEFAULT_RENDER_LIMITS: RenderLimits = { perUser: 10, perUserPerSecond: 10, total: 64, cacheBytes: 32 * 1024 * 1024 };

/** A document's version: its whole view (every figure, date, name and setting it shows), hashed. */
export function documentVersion(view: DocumentView): string {
  return createHash('sha256').update(JSON.stringify(view)).digest('base64url');
}

/**
 * The server's documents: each version of a document rendered once (kept in a cache bounded in
 * bytes; requests for a version being rendered wait for that render), the rest sent to `render`
 * (the worker pool). A user's burst is refused (429) as it arrives (src/http/document-burst-limit.ts),
 * before routing, any database read or render: finding a document and its version costs the event
 * loop a few reads, cached PDF or not, so a burst must not reach it. Every request counts twice:
 * while under way (`perUser` at once) and once in its second (`perUserPerSecond`). The second
 * count is what holds a flood of cached answers: on SQLite, whose driver answers without yielding
 * the event loop, such a request is over before the next one is read and was never under way
 * alongside another. Renders beyond the total are refused (503) before they queue.
 */
export class DocumentRenderer {
  private readonly cache: RenderedDocumentCache;
  private readonly underway = new Map<string, Promise<Buffer>>();
  private readonly perUser = new Map<string, number>();
  /** Each user's requests in the current second; its entries expire by themselves. */
  private readonly perSecond: RateLimiterMemory;
  private pending = 0;

  constructor(
    private readonly renderPdf: RenderPdf,
    private readonly limits: RenderLimits = DEFAULT_RENDER_LIMITS,
    private readonly observer: RenderObserver | null = null,
  ) {
    this.cache = new RenderedDocumentCache(limits.cacheBytes);
    this.perSecond = new RateLimiterMemory({ points: limits.perUserPerSecond, duration: 1 });
  }

  private refuse(message: string, retryAfterSeconds: number): never {
    this.observer?.documentRefused('user_limit');
    throw new RenderRefusedError('rate_limited', message, retryAfterSeconds);
  }

  /** Runs one PDF request of a user within the user's limits, or refuses it at once (429). */
  async forUser<T>(userId: string, work: () => Promise<T>): Promise<T> {
    // Counted before anything else: a cached answer, or one refused below, is a request too.
    const counted = await this.perSecond.consume(userId).catch((refused: unknown) => {
      if (refused instanceof RateLimiterRes) return refused;
      throw refused;
    });
    if (counted.consumedPoints > this.limits.perUserPerSecond) {
      this.refuse(`At most ${this.limits.perUserPerSecond} documents a second are prepared for you; retry shortly.`, Math.max(1, Math.ceil(counted.msBeforeNext / 1000)));
    }
    const mine = this.perUser.get(userId) ?? 0;
    if (mine >= this.limits.perUser) this.refuse(`At most ${this.limits.perUser} documents are prepared for you at once; retry shortly.`, 1);
    this.perUser.set(userId, mine + 1);
    try {
      return await work();
    } finally {
      const left = (this.perUser.get(userId) ?? 1) - 1;
      if (left > 0) this.perUser.set(userId, left);
      else this.perUser.delete(userId);
    }
  }

  /** A document's PDF: the cached copy of its version, the render under way, or a new render. */
  readonly render: RenderPdf = async (view) => {
    const key = documentVersion(view);
    const known = this.cache.get(key) ?? this.underway.get(key);
    if (known) {
      this.observer?.documentCacheHit();
      return known;
    }
    if (this.pending >= this.limits.total) {
      this.observer?.documentRefused('queue_full');
      throw new RenderRefusedError('service_unavailable', 'Too many documents are being prepared; retry shortly.', 2);
    }
    this.pending += 1;
    const rendering = this.renderPdf(view).then((pdf) => {
      this.observer?.documentRendered();
      this.cache.set(key, pdf);
      return pdf;
    });
    this.underway.set(key, rendering);
    try {
      return await rendering;
    } finally {
      this.underway.delete(key);
      this.pending -= 1;
    }
  };
}
