import type { User } from '../db/entities/user.js';
import { completeTaxProfile } from '../domain/tax-profile.js';
import type { components } from './generated/openapi.js';

/** A customer as the staff API and `billing-admin customers` show it. */
export function serializeCustomer(u: User): components['schemas']['Customer'] {
  return {
    id: u.id,
    username: u.username,
    external_id: u.externalId,
    email: u.email,
    first_name: u.firstName,
    last_name: u.lastName,
    locale: u.locale as 'id' | 'en' | null,
    tax_profile: completeTaxProfile(u.taxProfile),
    has_password: u.passwordHash !== '',
    disabled_at: u.disabledAt?.toISOString() ?? null,
    created_at: u.createdAt.toISOString(),
  };
}
