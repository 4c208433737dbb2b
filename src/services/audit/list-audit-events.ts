import type { FilterQuery } from '@mikro-orm/core';
import { AuditEvent } from '../../db/entities/audit-event.js';
import type { DataContext } from '../context.js';
import { findPage, type Page, type PageRequest } from '../common/pagination.js';

export interface AuditFilters {
  /** A target id. */
  target?: string;
  /** An actor's name or id. */
  actor?: string;
  since?: Date;
}

/** The audit trail, newest first. */
export async function listAuditEvents(ctx: Pick<DataContext, 'em'>, filters: AuditFilters, page: PageRequest): Promise<Page<AuditEvent>> {
  const where: FilterQuery<AuditEvent> = {};
  if (filters.target) where.targetId = filters.target;
  if (filters.actor) where.$or = [{ actorName: filters.actor }, { actorId: filters.actor }];
  if (filters.since) where.occurredAt = { $gte: filters.since };
  return findPage(ctx.em, AuditEvent, where, page, { orderBy: [{ occurredAt: 'desc' }, { id: 'desc' }] });
}
