/**
 * The service as a library, for host Koa applications: build the whole app from one typed
 * configuration, or mount only the access middleware with SUBSCRIPTION_SETTINGS-style options.
 */
export { createApp, type AppOptions, type BillingApp } from './app.js';
export { loadConfig, type Config } from './config.js';
export { startServer, type RunningServer } from './server.js';
export {
  subscriptionAccessMiddleware,
  isApiRequest,
  type SubscriptionAccessOptions,
  type SubscriptionSettings,
} from './http/access-middleware.js';
export { hasAccessGrantingSubscription } from './services/subscriptions/has-access.js';
