import type { Config } from '../../config.js';
import type { ChannelSender } from './send-outcome.js';
import { SmtpEmailSender } from './smtp-email-sender.js';
import { WebhookSender } from './webhook-sender.js';

/** The senders this process has configuration for; an unconfigured channel's entries stay queued. */
export interface DeliveryChannels {
  email: ChannelSender | null;
  webhook: ChannelSender | null;
}

export function createDeliveryChannels(config: Config): DeliveryChannels {
  return {
    email: config.smtpUrl ? new SmtpEmailSender(config.smtpUrl, config.mailFrom, config.documents) : null,
    webhook: config.outboundWebhookUrl
      ? new WebhookSender(config.outboundWebhookUrl, config.outboundWebhookSecret, config.outboundWebhookTimeoutMs)
      : null,
  };
}

export function closeDeliveryChannels(channels: DeliveryChannels): void {
  channels.email?.close();
  channels.webhook?.close();
}
