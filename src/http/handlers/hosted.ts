import type { Config } from '../../config.js';
import { createCheckoutSession, type MadeLink } from '../../services/hosted/hosted-sessions.js';
import { requireUser, type OperationHandlers } from '../operations.js';
import type { Context } from 'koa';

/** The origin hosted links are made on: PUBLIC_URL, else the one this request reached. */
export function hostedOrigin(config: Config, ctx: Context): string {
  // Built from protocol and host: Koa's ctx.origin is not what this request carries here.
  return config.hosted.publicUrl ?? `${ctx.protocol}://${ctx.host}`;
}

const serializeLink = ({ session, url }: MadeLink) => ({ id: session.id, url, expires_at: session.expiresAt.toISOString() });

export const hostedHandlers: OperationHandlers = {
  async createCheckoutSession(req) {
    const { plan_id, topup_amount, payment_type, success_url, cancel_url } = req.body;
    const link = await createCheckoutSession(
      req.services,
      requireUser(req),
      { planId: plan_id, topupAmount: topup_amount, paymentType: payment_type, successUrl: success_url, cancelUrl: cancel_url },
      hostedOrigin(req.services.config, req.koa),
    );
    return { status: 201, body: serializeLink(link) };
  },

};
