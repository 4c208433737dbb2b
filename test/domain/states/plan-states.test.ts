import { describe, expect, it } from 'vitest';
import { Plan, type PlanStatus } from '../../../src/db/entities/plan.js';
import { movePlanTo, planStates } from '../../../src/domain/states/plan-states.js';

const at = new Date('2027-01-01T00:00:00Z');
const planIn = (status: PlanStatus) => Object.assign(new Plan(), { status });

describe('the plan state machine', () => {
  it.each([
    ['active', 'archived'],
    ['inactive', 'archived'],
    ['active', 'inactive'],
    ['archived', 'active'],
    ['archived', 'inactive'],
  ] as const)('when the plan is %s, it moves to %s', (from, to) => {
    const plan = planIn(from);
    movePlanTo(plan, to, at);
    expect(plan.status).toBe(to);
  });

  it('when the plan is already archived, archiving again is no move', () => {
    const plan = planIn('archived');
    movePlanTo(plan, 'archived', at);
    expect(plan.status).toBe('archived');
    expect(planStates.can(plan, 'archive')).toBe(false);
  });
});
