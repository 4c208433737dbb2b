import type { Plan, PlanStatus } from '../../db/entities/plan.js';
import { StateMachine } from './state-machine.js';

export type PlanEvent = 'activate' | 'deactivate' | 'archive';

/**
 * A plan's place in the catalogue. Every move is allowed because the seed file is the
 * operator's catalogue (docs/operations.md, "plans seed" creates or updates by slug, status included), so an
 * archived plan can be brought back; subscriptions keep their plan whatever its status.
 */
export const planStates = new StateMachine<PlanStatus, PlanEvent, Plan>('plan', {
  activate: { from: ['inactive', 'archived'], to: 'active' },
  deactivate: { from: ['active', 'archived'], to: 'inactive' },
  archive: { from: ['active', 'inactive'], to: 'archived' },
});

const EVENT_TO: Record<PlanStatus, PlanEvent> = { active: 'activate', inactive: 'deactivate', archived: 'archive' };

/** Moves a plan to `status` through the machine; already there is no move (seeding and archiving are safe to repeat). */
export function movePlanTo(plan: Plan, status: PlanStatus, at: Date): void {
  if (plan.status !== status) planStates.apply(plan, EVENT_TO[status], at);
}
