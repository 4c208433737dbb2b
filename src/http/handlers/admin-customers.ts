import type { AccessRule } from '../access-middleware.js';
import { createCustomer, listCustomers, updateCustomer, type CustomerFields } from '../../services/users/customers.js';
import { findCustomer } from '../../services/users/find-customer.js';
import { staffActor } from '../auth/staff-gate.js';
import { serializeCustomer } from '../customer-serializers.js';
import type { components } from '../generated/openapi.js';
import type { OperationHandlers } from '../operations.js';
import { envelope, pageRequest } from '../pagination.js';

type UpdateBody = components['schemas']['UpdateCustomerRequest'];

/** The wire's fields of a create or a change, as the use case names them (absent stays absent). */
function customerFields(body: UpdateBody): CustomerFields {
  const fields: CustomerFields = {};
  if (body.external_id !== undefined) fields.externalId = body.external_id;
  if (body.email !== undefined) fields.email = body.email;
  if (body.first_name !== undefined) fields.firstName = body.first_name;
  if (body.last_name !== undefined) fields.lastName = body.last_name;
  if (body.locale !== undefined) fields.locale = body.locale;
  if (body.tax_profile !== undefined) fields.taxProfile = body.tax_profile;
  return fields;
}

/**
 * Customers made and changed by an integrator's backend or by staff (/admin/customers/), and
 * the access check: `accessRule` is the very rule the access middleware asks.
 */
export const adminCustomerHandlers = (accessRule: AccessRule): OperationHandlers => ({
  async adminListCustomers(req) {
    const page = pageRequest(req.query);
    const found = await listCustomers(req.services, { externalId: req.query.external_id, email: req.query.email, q: req.query.q }, page);
    return { status: 200, body: envelope(req.koa, found, page, serializeCustomer) };
  },

  async adminCreateCustomer(req) {
    const { username, password, reason, ...rest } = req.body;
    const customer = await createCustomer(req.services, staffActor(req.koa), { ...customerFields(rest), username, password, reason });
    return { status: 201, body: serializeCustomer(customer) };
  },

  async adminGetCustomer(req) {
    return { status: 200, body: serializeCustomer(await findCustomer(req.services, req.path.customer)) };
  },

  async adminUpdateCustomer(req) {
    const customer = await updateCustomer(req.services, staffActor(req.koa), req.path.customer, { ...customerFields(req.body), reason: req.body.reason });
    return { status: 200, body: serializeCustomer(customer) };
  },

  async adminCheckCustomerAccess(req) {
    const customer = await findCustomer(req.services, req.path.customer);
    // The host's router reads no query string or fragment as part of the path.
    const path = req.query.path.split(/[?#]/, 1)[0]!;
    // A disabled customer is no user to the middleware (authentication refuses them).
    const disabled = customer.disabledAt !== null;
    const decision = await accessRule(path, () => (disabled ? null : customer), req.koa);
    const reason = disabled && decision.reason === 'not_authenticated' ? 'customer_disabled' : decision.reason;
    if (reason === 'not_authenticated') throw new Error('the access rule found no user for a named customer');
    return { status: 200, body: { allowed: decision.allowed, reason } };
  },
});
