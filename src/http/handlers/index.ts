import type { LoginThrottler } from '../auth/login-throttle.js';
import type { OperationHandlers } from '../operations.js';
import { authHandlers } from './auth.js';
import { notificationHandlers } from './notifications.js';
import { planHandlers } from './plans.js';
import { topupHandlers } from './topups.js';
import { walletHandlers } from './wallet.js';
import { webhookHandlers } from './webhook.js';

/** Every implemented operation's handler; operations missing here answer 501. */
export function allHandlers(deps: { throttler: LoginThrottler }): OperationHandlers {
  return {
    ...authHandlers(deps.throttler),
    ...planHandlers,
    ...walletHandlers,
    ...topupHandlers,
    ...notificationHandlers,
    ...webhookHandlers,
  };
}
