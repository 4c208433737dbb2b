import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { RefusalReason } from '../services/documents/document-renderer.js';
import type { BillingRunReport } from '../services/billing/run-billing.js';
import { COUNTERS } from '../services/billing/run-billing.js';
import { PASS_OUTCOMES, type PassOutcome } from '../services/billing/scheduler-status.js';

/** Seconds; from a 5 ms cache hit to a gateway call near its 10 s timeout. */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** What the webhook acknowledges (openapi.yaml WebhookAck), plus `error` for a problem answer. */
export const WEBHOOK_OUTCOMES = ['ok', 'duplicate', 'invalid', 'failed', 'ignored', 'error'] as const;
export type WebhookOutcome = (typeof WEBHOOK_OUTCOMES)[number];

/** Why a notification was answered without a log row: a body over 64 KiB, or an invalid one over its source's quota. */
export const WEBHOOK_DROP_REASONS = ['too_large', 'invalid_over_quota'] as const;
export type WebhookDropReason = (typeof WEBHOOK_DROP_REASONS)[number];

/**
 * The service's Prometheus metrics, in a registry of its own (an embedding host keeps its
 * default registry to itself). Gauges read from the database are refreshed at scrape time
 * (src/metrics/database-gauges.ts); everything else moves where it happens.
 */
export class ServiceMetrics {
  readonly registry = new Registry();

  private readonly requests = new Histogram({
    name: 'billing_http_request_duration_seconds',
    help: 'API requests by contract operation and status (operation="unrouted": answered before routing, e.g. 401/429 by authentication, 413/415 on the body)',
    labelNames: ['operation', 'status'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  /** operation → status → child: after the first request of a kind, observing allocates nothing. */
  private readonly requestChildren = new Map<string, Map<number, Histogram.Internal<'operation' | 'status'>>>();

  private readonly webhooks = new Counter({
    name: 'billing_webhook_notifications_total',
    help: 'Gateway notifications received, by outcome (ok, duplicate, invalid signature, failed, ignored, or error: refused as a problem before a log was written)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  private readonly webhookDrops = new Counter({
    name: 'billing_webhook_dropped_total',
    help: 'Gateway notifications answered without being stored, by reason (too_large: 413 over 64 KiB; invalid_over_quota: an invalid notification beyond WEBHOOK_INVALID_PER_MINUTE from its source)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly gatewayCalls = new Histogram({
    name: 'billing_gateway_request_duration_seconds',
    help: 'Calls to the payment gateway by endpoint (charge, status, cancel, expire, refund, direct_refund) and outcome (ok or the gateway error kind)',
    labelNames: ['endpoint', 'outcome'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });

  private readonly billingRuns = new Counter({
    name: 'billing_billing_runs_total',
    help: "In-server billing passes (BILLING_SCHEDULER_INTERVAL), by result (ok, failed, or skipped: another process held the pass lock); `billing-admin billing run` is another process and is not counted",
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  private readonly billingOutcomes = new Counter({
    name: 'billing_billing_run_outcomes_total',
    help: 'What in-server billing passes did, by outcome (the counters of the billing run report, and `error` for a subscription not billed)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  private readonly lastPassStart = new Gauge({
    name: 'billing_scheduler_last_pass_timestamp_seconds',
    help: 'Unix time the last in-server billing pass that ran (ok or failed) started; 0 before the first. Alert when time() minus this exceeds a few BILLING_SCHEDULER_INTERVALs',
    registers: [this.registry],
  });

  private readonly lastPassDuration = new Gauge({
    name: 'billing_scheduler_last_pass_duration_seconds',
    help: 'How long the last in-server billing pass that ran (ok or failed) took',
    registers: [this.registry],
  });

  private readonly lastPassOk = new Gauge({
    name: 'billing_scheduler_last_success_timestamp_seconds',
    help: 'Unix time the last in-server billing pass that finished without throwing started; 0 before the first',
    registers: [this.registry],
  });

  private readonly documentsRendered = new Counter({
    name: 'billing_documents_rendered_total',
    help: 'Invoice and credit-note PDFs rendered by the worker pool (a version of a document once while it stays cached)',
    registers: [this.registry],
  });

  private readonly documentCacheHits = new Counter({
    name: 'billing_document_cache_hits_total',
    help: 'PDF requests answered with a rendered copy of the same version, or by joining its render under way',
    registers: [this.registry],
  });

  private readonly documentsRefused = new Counter({
    name: 'billing_document_renders_refused_total',
    help: "PDF renders refused before they queued: user_limit (the user's burst, 429) or queue_full (503)",
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  constructor() {
    for (const reason of ['user_limit', 'queue_full']) this.documentsRefused.labels(reason).inc(0);
    for (const outcome of WEBHOOK_OUTCOMES) this.webhooks.labels(outcome).inc(0);
    for (const result of PASS_OUTCOMES) this.billingRuns.labels(result).inc(0);
    for (const reason of WEBHOOK_DROP_REASONS) this.webhookDrops.labels(reason).inc(0);
    for (const outcome of [...COUNTERS, 'error']) this.billingOutcomes.labels(outcome).inc(0);
  }

  observeRequest(operation: string, status: number, seconds: number): void {
    let byStatus = this.requestChildren.get(operation);
    if (!byStatus) this.requestChildren.set(operation, (byStatus = new Map()));
    let child = byStatus.get(status);
    if (!child) byStatus.set(status, (child = this.requests.labels(operation, String(status))));
    child.observe(seconds);
  }

  webhookOutcome(outcome: WebhookOutcome): void {
    this.webhooks.labels(outcome).inc();
  }

  webhookDropped(reason: WebhookDropReason): void {
    this.webhookDrops.labels(reason).inc();
  }

  /** One tick of the in-server scheduler: its outcome, when it started (epoch ms), how long it took, and what it did. */
  billingPass(outcome: PassOutcome, report: BillingRunReport | null, startedAtMs: number, durationMs: number): void {
    this.billingRuns.labels(outcome).inc();
    if (outcome === 'skipped') return;
    this.lastPassStart.set(startedAtMs / 1000);
    this.lastPassDuration.set(durationMs / 1000);
    if (outcome === 'ok') this.lastPassOk.set(startedAtMs / 1000);
    if (!report) return;
    for (const c of COUNTERS) if (report[c] > 0) this.billingOutcomes.labels(c).inc(report[c]);
    if (report.errors.length > 0) this.billingOutcomes.labels('error').inc(report.errors.length);
  }

  documentRendered(): void {
    this.documentsRendered.inc();
  }

  documentCacheHit(): void {
    this.documentCacheHits.inc();
  }

  documentRefused(reason: RefusalReason): void {
    this.documentsRefused.labels(reason).inc();
  }

  gauge(name: string, help: string, labelNames: readonly string[], collect: (g: Gauge<string>) => Promise<void>): Gauge<string> {
    return new Gauge({ name, help, labelNames, registers: [this.registry], collect: async function (this: Gauge<string>) { await collect(this); } });
  }
}
