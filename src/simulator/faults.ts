import { CORE_OPERATIONS, FAULT_MODES, FAULT_TIMINGS, type CoreOperation, type Fault, type FaultMode, type FaultTiming } from './types.js';

/** Checks a fault request; returns the fault or a message saying what is wrong. */
export function parseFault(raw: unknown): Fault | string {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return 'body must be a JSON object';
  const { mode, count, operations, when, notify } = raw as Record<string, unknown>;
  if (typeof mode !== 'string' || !(FAULT_MODES as readonly string[]).includes(mode)) return `mode must be one of ${FAULT_MODES.join(', ')}`;
  const fault: Fault = { mode: mode as FaultMode };
  if (when !== undefined && when !== null) {
    if (typeof when !== 'string' || !(FAULT_TIMINGS as readonly string[]).includes(when)) return `when must be one of ${FAULT_TIMINGS.join(', ')}`;
    fault.when = when as FaultTiming;
  }
  if (count !== undefined && count !== null) {
    if (typeof count !== 'number' || !Number.isSafeInteger(count) || count < 1) return 'count must be a positive integer';
    fault.count = count;
  }
  if (operations !== undefined && operations !== null) {
    if (!Array.isArray(operations) || operations.some((o) => !(CORE_OPERATIONS as readonly string[]).includes(o))) {
      return `operations must be a list of ${CORE_OPERATIONS.join(', ')}`;
    }
    fault.operations = operations as CoreOperation[];
  }
  if (notify !== undefined && notify !== null) {
    if (typeof notify !== 'boolean') return 'notify must be true or false';
    fault.notify = notify;
  }
  return fault;
}

export interface TakenFault {
  mode: FaultMode;
  when: FaultTiming;
  notify: boolean;
}

const NO_FAULT: TakenFault = { mode: 'none', when: 'before', notify: true };

export class FaultInjector {
  #mode: FaultMode = 'none';
  #when: FaultTiming = 'before';
  #remaining: number | null = null;
  #operations: CoreOperation[] | null = null;
  #notify = true;

  set(fault: Fault): void {
    this.#mode = fault.mode;
    this.#notify = fault.notify ?? true;
    this.#when = fault.when ?? 'before';
    this.#remaining = fault.mode === 'none' ? null : (fault.count ?? null);
    this.#operations = fault.operations ?? null;
  }

  /** The fault for this call, counting it against `count`. */
  take(op: CoreOperation): TakenFault {
    if (this.#mode === 'none') return NO_FAULT;
    if (this.#operations !== null && !this.#operations.includes(op)) return NO_FAULT;
    const taken: TakenFault = { mode: this.#mode, when: this.#when, notify: this.#notify };
    if (this.#remaining !== null) {
      this.#remaining -= 1;
      if (this.#remaining <= 0) this.set({ mode: 'none' });
    }
    return taken;
  }

  describe(): { mode: FaultMode; when: FaultTiming; remaining: number | null; operations: CoreOperation[] | null } {
    return { mode: this.#mode, when: this.#when, remaining: this.#remaining, operations: this.#operations };
  }
}
