import type { InvalidLogQuota } from '../../services/gateway-events/invalid-notification-quota.js';
import type { DocumentRenderer } from '../../services/documents/document-renderer.js';
import type { CatalogueCache } from '../../services/plans/catalogue-cache.js';
import type { AccessRule } from '../access-middleware.js';
import type { LoginThrottler } from '../auth/login-throttle.js';
import type { OperationHandlers } from '../operations.js';
import { adminActionHandlers } from './admin-actions.js';
import { adminCouponHandlers } from './admin-coupons.js';
import { adminCustomerHandlers } from './admin-customers.js';
import { adminMetricHandlers } from './admin-metrics.js';
import { adminReadHandlers } from './admin-reads.js';
import { authHandlers } from './auth.js';
import { creditNoteHandlers } from './credit-notes.js';
import { documentHandlers } from './documents.js';
import { eventHandlers } from './events.js';
import { hostedHandlers } from './hosted.js';
import { invoiceHandlers } from './invoices.js';
import { notificationHandlers } from './notifications.js';
import { paymentHandlers } from './payments.js';
import { planHandlers } from './plans.js';
import { subscriptionHandlers } from './subscriptions.js';
import { subscriptionQuantityHandlers } from './subscription-quantity.js';
import { taxHandlers } from './tax.js';
import { topupHandlers } from './topups.js';
import { usageHandlers } from './usage.js';
import { walletHandlers } from './wallet.js';
import { webhookHandlers } from './webhook.js';

/** Every implemented operation's handler; operations missing here answer 501. */
export function allHandlers(deps: {
  throttler: LoginThrottler;
  catalogue: CatalogueCache;
  invalidWebhookQuota: InvalidLogQuota;
  documents: DocumentRenderer;
  accessRule: AccessRule;
}): OperationHandlers {
  return {
    ...authHandlers(deps.throttler),
    ...planHandlers(deps.catalogue),
    ...walletHandlers,
    ...taxHandlers,
    ...topupHandlers,
    ...hostedHandlers,
    ...notificationHandlers,
    ...webhookHandlers(deps.invalidWebhookQuota),
    ...subscriptionHandlers,
    ...subscriptionQuantityHandlers,
    ...paymentHandlers,
    ...invoiceHandlers,
    ...creditNoteHandlers,
    ...documentHandlers(deps.documents),
    ...adminReadHandlers,
    ...adminActionHandlers,
    ...adminCustomerHandlers(deps.accessRule),
    ...adminCouponHandlers,
    ...usageHandlers,
    ...adminMetricHandlers,
    ...eventHandlers,
  };
}
