import type { Clock } from '../../domain/clock.js';
import { GatewayError } from '../../gateway/errors.js';
import type { PaymentGateway } from '../../gateway/types.js';

/** The order the check asks about: no order of ours looks like it (order ids are SUB-, TOP-…), so the gateway answers 404. */
export const CREDENTIAL_PROBE_ORDER_ID = 'READYZ-CREDENTIAL-CHECK-NO-SUCH-ORDER';

/** How long one answer stands: the gateway is asked at start (src/server.ts) and then at most this often, never on every probe. */
export const CREDENTIAL_CHECK_INTERVAL_MS = 5 * 60 * 1000;

export interface CredentialCheckResult {
  ok: boolean;
  detail: string | null;
}

/**
 * NOTE: proves the server key the way a payment would use it (docs/gateway.md, "Readiness"): a
 * status call for an order that cannot exist. 404 means the gateway accepted the key; 401
 * means it refused it, and the process is not ready. A gateway that cannot be reached or answers
 * something else says nothing about the key: that is shown, never counted (a gateway outage must
 * not take every process out of the load balancer; payments then answer 503 themselves).
 */
export class GatewayCredentialCheck {
  readonly #gateway: PaymentGateway;
  readonly #clock: Clock;
  readonly #intervalMs: number;
  #last: { at: number; result: CredentialCheckResult } | null = null;
  #running: Promise<CredentialCheckResult> | null = null;

  constructor(gateway: PaymentGateway, clock: Clock, intervalMs = CREDENTIAL_CHECK_INTERVAL_MS) {
    this.#gateway = gateway;
    this.#clock = clock;
    this.#intervalMs = intervalMs;
  }

  /**
   * The standing answer. With none yet, the gateway is asked (one call at a time); an answer older
   * than the interval is still given while the gateway is asked again in the background.
   */
  current(): Promise<CredentialCheckResult> {
    if (!this.#last) return this.refresh();
    if (this.#clock.now().getTime() - this.#last.at >= this.#intervalMs) void this.refresh();
    return Promise.resolve(this.#last.result);
  }

  /** Asks the gateway now (joining a call already under way). */
  refresh(): Promise<CredentialCheckResult> {
    if (this.#running) return this.#running;
    const run = this.#ask().then((result) => {
      this.#last = { at: this.#clock.now().getTime(), result };
      return result;
    });
    this.#running = run;
    void run.finally(() => {
      if (this.#running === run) this.#running = null;
    });
    return run;
  }

  async #ask(): Promise<CredentialCheckResult> {
    try {
      await this.#gateway.status(CREDENTIAL_PROBE_ORDER_ID);
      // An answer for an order nobody made: the key was accepted all the same.
      return { ok: true, detail: null };
    } catch (err) {
      if (!(err instanceof GatewayError)) return { ok: true, detail: 'the credential check failed unexpectedly; the server key is not proven' };
      if (err.kind === 'not_found') return { ok: true, detail: null };
      if (err.kind === 'unauthorized') {
        return { ok: false, detail: 'the payment gateway refused the server key (401): check GATEWAY_SERVER_KEY (and that GATEWAY_BASE_URL is the environment the key belongs to)' };
      }
      return { ok: true, detail: `the payment gateway did not answer the credential check (${err.kind}); the server key is not proven yet` };
    }
  }
}
