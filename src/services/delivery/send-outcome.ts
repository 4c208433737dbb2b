import type { Notification } from '../../db/entities/notification.js';
import type { ReceiptDocument } from '../documents/receipt-document.js';

// What a channel sender and the delivery loop share. Kept apart from channels.ts, which builds
// the senders: the senders import these, and channels.ts imports the senders.

/** How one try went. `permanent` failures are not retried (an SMTP 5xx, an invalid address). */
export interface SendOutcome {
  ok: boolean;
  permanent: boolean;
  error: string | null;
  httpStatus: number | null;
}

export const delivered = (httpStatus: number | null = null): SendOutcome => ({ ok: true, permanent: false, error: null, httpStatus });
export const retryable = (error: string, httpStatus: number | null = null): SendOutcome => ({ ok: false, permanent: false, error, httpStatus });
export const permanent = (error: string): SendOutcome => ({ ok: false, permanent: true, error, httpStatus: null });

/**
 * Sends one entry of its channel; never throws for a failure of the receiving side. `document`
 * is the receipt's invoice or credit note: emails attach it, webhooks link to it.
 */
export interface ChannelSender {
  send(entry: Notification, at: Date, document?: ReceiptDocument | null): Promise<SendOutcome>;
  close(): void;
}

/** Error texts end up in the database and in `notifications list`: one line, bounded. */
export function oneLine(text: string, max = 500): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
