import { InvalidStateError } from '../errors.js';

export interface Move<S extends string, T> {
  from: readonly S[];
  to: S;
  /** Stamps the time that belongs with the move (canceled_at, paused_at…). */
  stamp?: (entity: T, at: Date) => void;
}

/**
 * A status machine as data: the allowed moves, and the one function that may write `status`.
 * Every entry point (HTTP, webhook, sync, CLI, billing run) goes through `apply`, so an illegal
 * move is impossible from anywhere.
 */
export class StateMachine<S extends string, E extends string, T extends { status: S }> {
  constructor(
    readonly name: string,
    private readonly moves: Record<E, Move<S, T>>,
    private readonly onChange?: (entity: T, from: S, to: S) => void,
  ) {}

  can(entity: T, event: E): boolean {
    return this.moves[event].from.includes(entity.status);
  }

  /** Applies the move or throws `invalid_state`. */
  apply(entity: T, event: E, at: Date): void {
    if (!this.can(entity, event)) {
      throw new InvalidStateError(`Cannot ${event.replace(/_/g, ' ')} a ${this.name} that is ${entity.status.replace(/_/g, ' ')}.`);
    }
    const move = this.moves[event];
    const from = entity.status;
    entity.status = move.to;
    move.stamp?.(entity, at);
    this.onChange?.(entity, from, move.to);
  }

  /** Applies the move when allowed; returns whether it did. For notifications that may arrive late. */
  applyIfAllowed(entity: T, event: E, at: Date): boolean {
    if (!this.can(entity, event)) return false;
    this.apply(entity, event, at);
    return true;
  }
}
