/* Support staff's reads of every user's resources: the staff API and `billing-admin` call these. */
export { findUserByRef, type StaffListFilters } from './filters.js';
export * from './staff-lists.js';
export * from './staff-lookups.js';
export { paymentStatusCheck, type PaymentStatusCheck } from '../payments/check-payment-status.js';
