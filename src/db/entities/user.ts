import type { TaxProfile } from '../../domain/tax-profile.js';
import { EntitySchema } from '@mikro-orm/core';
import { createdAtProperty, idProperty, updatedAtProperty } from './common.js';

export class User {
  id!: string;
  username!: string;
  /** The integrator's own id for this customer (unique): how its backend names them to us. */
  externalId: string | null = null;
  email: string | null = null;
  /**
   * The scrypt hash of the password; '' for a customer made by an integrator's backend without
   * one, who cannot log in and is served through that backend and the hosted pages.
   */
  passwordHash!: string;
  /** The language the customer reads ('id' or 'en'): emails and hosted pages use it. */
  locale: string | null = null;
  isStaff = false;
  firstName = '';
  lastName = '';
  phone: string | null = null;
  /** The buyer identity invoices are made out to (PUT /tax-profile/); each invoice keeps a copy. */
  taxProfile: TaxProfile | null = null;
  /** Set by `billing-admin users disable`: the user can no longer log in or use the API. */
  disabledAt: Date | null = null;
  createdAt!: Date;
  updatedAt!: Date;
}

export const UserSchema = new EntitySchema<User>({
  class: User,
  tableName: 'users',
  properties: {
    id: idProperty,
    username: { type: 'string', length: 150, unique: true },
    externalId: { type: 'string', length: 100, nullable: true, unique: true },
    email: { type: 'string', length: 254, nullable: true },
    locale: { type: 'string', length: 10, nullable: true },
    passwordHash: { type: 'text', hidden: true },
    isStaff: { type: 'boolean', default: false },
    firstName: { type: 'string', length: 150, default: '' },
    lastName: { type: 'string', length: 150, default: '' },
    phone: { type: 'string', length: 50, nullable: true },
    taxProfile: { type: 'json', nullable: true },
    disabledAt: { type: 'Date', nullable: true },
    createdAt: createdAtProperty,
    updatedAt: updatedAtProperty,
  },
});
