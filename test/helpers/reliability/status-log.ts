import type { Contract, Operation } from './contract.js';
import { readAnswer } from './server-process.js';

/*
 * Every answer a test got, by operation: the status, and whether the contract documents it
 * with that content type and body. The fuzzer and the status walker write to it; a test then
 * asks for what the contract does not cover.
 */

export interface LoggedAnswer {
  operation: string;
  /** What was sent, for the failure message. */
  request: string;
  status: number;
  problems: string[];
}

export class StatusLog {
  readonly answers: LoggedAnswer[] = [];

  constructor(private readonly contract: Contract) {}

  /** Judges one answer against the operation's documented responses and keeps it. */
  record(op: Operation, request: string, status: number, contentType: string | null, body: unknown): LoggedAnswer {
    const answer = { operation: op.id, request, status, problems: this.contract.check(op, status, contentType, body) };
    this.answers.push(answer);
    return answer;
  }

  /** Sends a request with fetch and records its answer. */
  async fetch(op: Operation, url: string, init: RequestInit, label: string): Promise<LoggedAnswer> {
    const res = await fetch(url, { ...init, redirect: 'manual', signal: AbortSignal.timeout(30_000) });
    const { contentType, body, malformedJson } = await readAnswer(res);
    return this.record(op, label, res.status, contentType, malformedJson ? Symbol('not JSON') : body);
  }

  /** Statuses seen per operation: {operationId: [200, 401, …]}. */
  statuses(): Record<string, number[]> {
    const seen: Record<string, Set<number>> = {};
    for (const a of this.answers) (seen[a.operation] ??= new Set()).add(a.status);
    return Object.fromEntries(Object.entries(seen).map(([op, s]) => [op, [...s].sort((x, y) => x - y)]));
  }

  /** Answers the contract does not document, one per operation, status and first problem. */
  undocumented(): Record<string, LoggedAnswer> {
    const found: Record<string, LoggedAnswer> = {};
    for (const a of this.answers) {
      if (a.problems.length === 0) continue;
      found[`${a.operation} ${a.status} ${a.problems[0].slice(0, 100)}`] ??= a;
    }
    return found;
  }
}
