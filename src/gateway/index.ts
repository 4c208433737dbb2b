export * from './types.js';
export * from './errors.js';
export { MidtransClient, type MidtransClientOptions } from './midtrans-client.js';
export { computeSignature, verifySignature, type SignedPayload } from './signature.js';
export { extractPaymentDetails, readExpiryTime } from './payment-details.js';
export { parseMidtransTime } from './midtrans-time.js';
export { ORDER_ID_PATTERN } from './charge-body.js';
