import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { parseDocument, visit } from 'yaml';
import { keepsNumberText, parseJsonExact } from '../../src/domain/exact-json.js';
import { serializePlan } from '../../src/http/serializers.js';
import { Plan } from '../../src/db/entities/plan.js';
import { archivePlan, listAllPlans } from '../../src/services/plans/archive-plan.js';
import { changedFields } from '../../src/services/audit/record-audit-event.js';
import { seedPlans } from '../../src/services/plans/seed-plans.js';
import { CliFailure, EXIT, globalOptions, output, table, withServices } from '../runtime.js';
import { auditCliChange, withReason } from '../audit-trail.js';

/**
 * YAML read as the API reads JSON (src/domain/exact-json.ts): a number a double would change,
 * or one written with zeros past its cents (`price: 50.000`, fifty thousand to an Indonesian
 * eye), reaches the plan rules as its text, which they judge, never as the double.
 */
function parseYamlExact(text: string): unknown {
  const doc = parseDocument(text);
  if (doc.errors.length > 0) throw doc.errors[0];
  visit(doc, {
    Scalar(_key, node) {
      if (typeof node.value === 'number' && node.source && /^-?\d/.test(node.source) && keepsNumberText(node.source)) node.value = node.source;
    },
  });
  return doc.toJS();
}

function readPlansFile(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    // A file that is not there is "not found" (4), like any other thing named that does not exist.
    const missing = (err as NodeJS.ErrnoException).code === 'ENOENT';
    throw new CliFailure(`cannot read ${file}: ${(err as Error).message}`, missing ? EXIT.notFound : EXIT.usage);
  }
  try {
    return /\.json$/i.test(file) ? parseJsonExact(text) : parseYamlExact(text);
  } catch (err) {
    throw new CliFailure(`${file} is not valid ${/\.json$/i.test(file) ? 'JSON' : 'YAML'}: ${(err as Error).message}`, EXIT.usage);
  }
}

export function registerPlanCommands(program: Command): void {
  const plans = program.command('plans').description('the plan catalogue');

  plans
    .command('seed <file>')
    .description('create or update plans by slug from a JSON or YAML array (running it twice changes nothing)')
    .action(async (file: string, _opts, cmd: Command) => {
      const seeds = readPlansFile(file);
      const result = await withServices(async (s) => {
        const seeded = await seedPlans(s, seeds);
        const touched = [...seeded.created.map((slug) => ['plan.create', slug]), ...seeded.updated.map((slug) => ['plan.update', slug])];
        await auditCliChange(s, ...touched.map(([action, slug]) => ({ action, target: { type: 'plan', id: String(slug) }, changes: { source: [null, file] as [unknown, unknown] } })));
        return seeded;
      });
      output(globalOptions(cmd), result, () =>
        `Plans: ${result.created.length} created, ${result.updated.length} updated, ${result.unchanged.length} unchanged.`,
      );
    });

  plans
    .command('list')
    .description('list every plan, whatever its status')
    .action(async (_opts, cmd: Command) => {
      const rows = (await withServices((s) => listAllPlans(s))).map(serializePlan);
      // Usage charges as metric:model, comma-separated (the plan's full terms are in --json).
      const shown = rows.map((p) => ({ ...p, charges: p.charges.map((c) => `${c.metric}:${c.model}`).join(',') }));
      output(globalOptions(cmd), rows, () => table(shown, ['slug', 'name', 'price', 'currency', 'interval', 'interval_unit', 'per_unit', 'charges', 'status']));
    });

  withReason(plans.command('archive <slug>'))
    .description('take a plan out of the catalogue (existing subscriptions keep it)')
    .action(async (slug: string, opts: { reason: string }, cmd: Command) => {
      const plan = await withServices(async (s) => {
        const before = (await s.em.findOne(Plan, { slug }))?.status ?? null;
        const archived = await archivePlan(s, slug);
        // Archiving an archived plan changes nothing and records nothing.
        await auditCliChange(s, { action: 'plan.archive', target: { type: 'plan', id: archived.id }, reason: opts.reason, changes: changedFields({ status: before }, { status: archived.status }) });
        return archived;
      });
      output(globalOptions(cmd), serializePlan(plan), () => `Archived ${plan.slug}.`);
    });
}
