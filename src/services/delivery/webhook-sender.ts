import type { Notification } from '../../db/entities/notification.js';
import type { ReceiptDocument } from '../documents/receipt-document.js';
import { delivered, oneLine, retryable, type ChannelSender, type SendOutcome } from './send-outcome.js';
import { signWebhookBody } from './webhook-signature.js';

/** Enough of a receiver's answer to say why it refused; the rest is never read. */
const RESPONSE_SNIPPET_BYTES = 2048;

/**
 * The JSON document a merchant's endpoint receives for one notification entry; a receipt's data
 * also links to its PDFs (`invoice_pdf`, `credit_note_pdf`).
 */
export function webhookBody(entry: Notification, document: ReceiptDocument | null = null): string {
  const data = document ? { ...entry.data, ...document.links } : entry.data;
  return JSON.stringify({ id: entry.id, type: entry.notificationType, created_at: entry.createdAt.toISOString(), data });
}

/** Reads at most `max` bytes of a body and abandons the rest, so a huge answer costs nothing. */
async function readCapped(res: Response, max: number): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < max) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.length;
    }
  } catch {
    // A body cut short or timed out adds nothing to the status.
  } finally {
    reader.cancel().catch(() => undefined);
  }
  return Buffer.concat(chunks).subarray(0, max).toString('utf8');
}

function describeFailure(err: unknown, timeoutMs: number): string {
  const e = err as Error & { cause?: { code?: string; message?: string } };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return `no answer within ${timeoutMs} ms`;
  if (e?.cause) return oneLine(`connection failed: ${[e.cause.code, e.cause.message].filter(Boolean).join(': ')}`);
  return oneLine(`request failed: ${e?.message ?? String(err)}`);
}

/**
 * Posts `webhook` entries to OUTBOUND_WEBHOOK_URL, signed with OUTBOUND_WEBHOOK_SECRET. Only a
 * 2xx answer within the timeout counts as delivered; redirects are not followed.
 */
export class WebhookSender implements ChannelSender {
  constructor(
    private readonly url: string,
    private readonly secret: string | null,
    private readonly timeoutMs: number,
  ) {}

  async send(entry: Notification, at: Date, document: ReceiptDocument | null = null): Promise<SendOutcome> {
    // Unsigned events would teach receivers to skip verification; wait for the secret instead.
    if (!this.secret) return retryable('OUTBOUND_WEBHOOK_SECRET is not set; webhooks are never sent unsigned');
    const body = webhookBody(entry, document);
    const signal = AbortSignal.timeout(this.timeoutMs);
    let res: Response;
    try {
      res = await fetch(this.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'billing-service-webhooks/1',
          'x-billing-event-id': entry.id,
          'x-billing-signature': signWebhookBody(this.secret, Math.floor(at.getTime() / 1000), body),
        },
        body,
        redirect: 'manual',
        signal,
      });
    } catch (err) {
      return retryable(describeFailure(err, this.timeoutMs));
    }
    const snippet = await readCapped(res, RESPONSE_SNIPPET_BYTES);
    if (res.status >= 200 && res.status < 300) return delivered(res.status);
    return retryable(oneLine(`HTTP ${res.status}${snippet.trim() ? `: ${snippet}` : ''}`), res.status);
  }

  close(): void {
    // fetch keeps no per-sender state to release.
  }
}
