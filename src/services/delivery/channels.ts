import type { Config } from '../../config.js';
import type { Notification } from '../../db/entities/notification.js';
import { SmtpEmailSender } from './smtp-email-sender.js';
import { WebhookSender } from './webhook-sender.js';

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

/** Sends one entry of its channel; never throws for a failure of the receiving side. */
export interface ChannelSender {
  send(entry: Notification, at: Date): Promise<SendOutcome>;
  close(): void;
}

/** The senders this process has configuration for; an unconfigured channel's entries stay queued. */
export interface DeliveryChannels {
  email: ChannelSender | null;
  webhook: ChannelSender | null;
}

export function createDeliveryChannels(config: Config): DeliveryChannels {
  return {
    email: config.smtpUrl ? new SmtpEmailSender(config.smtpUrl, config.mailFrom) : null,
    webhook: config.outboundWebhookUrl
      ? new WebhookSender(config.outboundWebhookUrl, config.outboundWebhookSecret, config.outboundWebhookTimeoutMs)
      : null,
  };
}

export function closeDeliveryChannels(channels: DeliveryChannels): void {
  channels.email?.close();
  channels.webhook?.close();
}

/** Error texts end up in the database and in `notifications list`: one line, bounded. */
export function oneLine(text: string, max = 500): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
