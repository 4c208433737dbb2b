import type { Transporter } from 'nodemailer';
import type SMTPConnection from 'nodemailer/lib/smtp-connection/index.js';
import type SMTPTransport from 'nodemailer/lib/smtp-transport/index.js';
import type { Notification } from '../../db/entities/notification.js';
import { delivered, oneLine, permanent, retryable, type ChannelSender, type SendOutcome } from './send-outcome.js';
import type { ReceiptDocument } from '../documents/receipt-document.js';
import type { PdfFile } from '../documents/invoice-pdf.js';
import { renderNotificationEmail } from './email-templates.js';
import type { LocaleSettings } from '../documents/labels/labels.js';
import { DEFAULT_LOCALE_SETTINGS } from '../documents/labels/localisation.js';

// Deliberately stricter than RFC 5322: anything a mail server would have to guess about fails at once.
const ADDRESS = /^[^\s@<>()[\],;:"\\]+@[^\s@<>()[\],;:"\\]+\.[^\s@<>()[\],;:"\\]+$/;

/**
 * NOTE: an SMTP 5xx reply or an address that cannot be an address is permanent: retrying cannot
 * help, so the entry fails at once. 4xx replies, refused connections and timeouts are temporary.
 * A 5xx on authentication (EAUTH) is our misconfiguration, not the message's, so it is retried
 * and an operator can fix the credentials before the retries run out.
 */
export function classifySmtpError(err: unknown): SendOutcome {
  const e = err as SMTPConnection.SMTPError;
  const code = typeof e?.responseCode === 'number' ? e.responseCode : null;
  const reason = oneLine(`${code ? `SMTP ${code}` : (e?.code ?? 'SMTP error')}: ${e?.response ?? e?.message ?? String(err)}`);
  if (code !== null && code >= 500 && e.code !== 'EAUTH') return permanent(reason);
  if (code === null && e?.code === 'EENVELOPE') return permanent(reason);
  return retryable(reason);
}

/** Sends `email` entries through the SMTP server named by SMTP_URL, one connection per message. */
export class SmtpEmailSender implements ChannelSender {
  // NOTE: nodemailer (35 modules) is loaded on the first message, not when the server starts.
  private transport: Promise<Transporter<SMTPTransport.SentMessageInfo>> | null = null;
  private readonly options: SMTPTransport.Options;

  constructor(
    smtpUrl: string,
    private readonly from: string,
    /** BILLING_LOCALE and BILLING_TIMEZONE: the email's language and its dates. */
    private readonly locale: LocaleSettings = DEFAULT_LOCALE_SETTINGS,
  ) {
    const options: SMTPTransport.Options = {
      url: smtpUrl,
      // nodemailer's defaults let a silent server hold a delivery for up to an hour.
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 30_000,
      dnsTimeout: 10_000,
    };
    this.options = options;
  }

  private transporter(): Promise<Transporter<SMTPTransport.SentMessageInfo>> {
    this.transport ??= import('nodemailer').then((nodemailer) => nodemailer.default.createTransport(this.options));
    return this.transport;
  }

  async send(entry: Notification, _at?: Date, document: ReceiptDocument | null = null): Promise<SendOutcome> {
    const user = entry.user;
    const address = user.email?.trim() ?? '';
    if (!address) return permanent('the user has no email address');
    if (address.length > 254 || !ADDRESS.test(address)) return permanent(`invalid email address ${JSON.stringify(address)}`);
    let email;
    try {
      email = renderNotificationEmail(entry.notificationType, entry.data, user.firstName || user.username, this.locale);
    } catch (err) {
      return permanent(oneLine(`cannot render the email: ${(err as Error).message}`));
    }
    let attachment: PdfFile | null = null;
    try {
      attachment = document ? await document.render() : null;
    } catch (err) {
      // Our own failure, not the message's: try again later rather than send a receipt without it.
      return retryable(oneLine(`cannot render the receipt's PDF: ${(err as Error).message}`));
    }
    const name = [user.firstName, user.lastName].filter(Boolean).join(' ');
    try {
      await (await this.transporter()).sendMail({
        from: this.from,
        to: name ? { name, address } : address,
        subject: email.subject,
        text: email.text,
        html: email.html,
        headers: { 'X-Billing-Notification-Id': entry.id },
        attachments: attachment ? [{ filename: attachment.filename, content: attachment.pdf, contentType: 'application/pdf' }] : [],
      });
      return delivered();
    } catch (err) {
      return classifySmtpError(err);
    }
  }

  close(): void {
    void this.transport?.then((transport) => transport.close());
  }
}
