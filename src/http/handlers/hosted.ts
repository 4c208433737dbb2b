import type { Config } from '../../config.js';
import { createCheckoutSession, createPortalSession, type MadeLink } from '../../services/hosted/hosted-sessions.js';
import type { User } from '../../db/entities/user.js';
import { ValidationError } from '../../domain/errors.js';
import { findWalletOwner } from '../../services/wallet/find-wallet-owner.js';
import { requireUser, type OperationHandlers, type OperationRequest } from '../operations.js';
import type { Context } from 'koa';

/**
 * The origin hosted links are made on: PUBLIC_URL (the server fills it in with its own listening
 * address when it is not set, outside production). The request is never consulted: its Host
 * header is whatever the caller wrote, and a link on it could send a customer anywhere.
 */
export function hostedOrigin(config: Config, _request?: Context): string {
  return config.hosted.publicUrl ?? `http://${config.host}:${config.port}`;
}

/**
 * The customer a link is for: the caller, or with a write API key (api.ts checked its scope)
 * the customer the Billing-Customer header names (the request's user) or the body's `user`
 * (kept for clients from before the header); with both, they must name the same customer.
 * `user` with the customer's own credentials is refused, not ignored.
 */
async function customerOf(req: OperationRequest<'createCheckoutSession' | 'createPortalSession'>): Promise<User> {
  const named = req.body.user;
  if (req.koa.state.authMethod === 'api_key') {
    const onBehalfOf = req.koa.state.onBehalfOf;
    if (named === undefined) {
      if (!onBehalfOf) throw new ValidationError([{ field: 'user', message: 'is required with an API key unless the Billing-Customer header names the customer' }]);
      return requireUser(req);
    }
    const customer = await findWalletOwner(req.services, named);
    if (onBehalfOf && customer.id !== onBehalfOf.id) {
      throw new ValidationError([{ field: 'user', message: 'names another customer than the Billing-Customer header' }]);
    }
    return customer;
  }
  if (named !== undefined) throw new ValidationError([{ field: 'user', message: 'applies to API keys only; a customer asks for their own link' }]);
  return requireUser(req);
}

const serializeLink = ({ session, url }: MadeLink) => ({ id: session.id, url, expires_at: session.expiresAt.toISOString() });

export const hostedHandlers: OperationHandlers = {
  async createCheckoutSession(req) {
    const { plan_id, topup_amount, payment_type, quantity, promotion_code, success_url, cancel_url } = req.body;
    const link = await createCheckoutSession(
      req.services,
      await customerOf(req),
      { planId: plan_id, topupAmount: topup_amount, paymentType: payment_type, quantity, promotionCode: promotion_code, successUrl: success_url, cancelUrl: cancel_url },
      hostedOrigin(req.services.config, req.koa),
    );
    return { status: 201, body: serializeLink(link) };
  },

  async createPortalSession(req) {
    const link = await createPortalSession(req.services, await customerOf(req), req.body.return_url, hostedOrigin(req.services.config, req.koa));
    return { status: 201, body: serializeLink(link) };
  },
};
