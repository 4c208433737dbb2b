import { EntitySchema } from '@mikro-orm/core';
import { createdAtProperty, idProperty } from './common.js';
import { Plan } from './plan.js';
import { User } from './user.js';

/**
 * A trial given to a user on a plan, written when the trial starts. NOTE: one per user and plan,
 * ever (the unique index): later plan changes, cancellations or new subscriptions do not give
 * the trial back.
 */
export class TrialGrant {
  id!: string;
  user!: User;
  plan!: Plan;
  createdAt!: Date;
}

export const TrialGrantSchema = new EntitySchema<TrialGrant>({
  class: TrialGrant,
  tableName: 'trial_grants',
  uniques: [{ name: 'trial_grants_user_plan_unique', properties: ['user', 'plan'] }],
  properties: {
    id: idProperty,
    user: { kind: 'm:1', entity: () => User },
    plan: { kind: 'm:1', entity: () => Plan },
    createdAt: createdAtProperty,
  },
});
