import { getHeapStatistics } from 'node:v8';
import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';

let registry: Registry | null = null;

/**
 * The process's own metrics (prom-client's defaults: CPU, resident memory, heap and its spaces,
 * garbage-collection pauses, event-loop lag, open handles) and the heap's limit, in a registry
 * made once per process: its collectors watch the process itself (a garbage-collection observer,
 * an event-loop delay monitor), so every app built in one process (tests build many) shares
 * them instead of adding observers that are never removed.
 */
export function processMetrics(): Registry {
  if (registry) return registry;
  registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // `start:prod` and the Dockerfile cap the heap (--max-old-space-size): heap used over this
  // limit is how close the process is to running out of memory.
  new Gauge({
    name: 'nodejs_heap_size_limit_bytes',
    help: 'The V8 heap size limit in bytes (set by --max-old-space-size); compare with nodejs_heap_size_used_bytes',
    registers: [registry],
    collect() {
      this.set(getHeapStatistics().heap_size_limit);
    },
  });
  return registry;
}
