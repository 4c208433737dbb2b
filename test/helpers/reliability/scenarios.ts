import { expect } from 'vitest';
import { runCli, type CliResult } from '../cli.js';
import {
  acknowledged,
  buildScenario,
  compareWithModel,
  deliver,
  deliverUntilAcknowledged,
  existingLogIds,
  seedScenario,
  type DeliveryOutcome,
  type Scenario,
  type StateReport,
} from './notification-load.js';
import { baseEnv, startServerProcess, type ServerProcess } from './server-process.js';

/**
 * Webhook load needs no gateway, so these servers run as deployed: NODE_ENV=production (no
 * simulator, no per-response contract check), a gateway URL nobody calls.
 */
export const PRODUCTION_ENV = { NODE_ENV: 'production', GATEWAY_BASE_URL: 'http://127.0.0.1:9', PUBLIC_URL: 'https://billing.example.com' };

export interface LoadRun {
  scenario: Scenario;
  report: StateReport;
  /** Acknowledgements by body status over every round (ok, duplicate). */
  answers: Record<string, number>;
  /** Deliveries of the first round that were not answered 2xx, as `index: status`. */
  firstRoundFailures: string[];
  /** The environment the servers ran with (for CLI runs on the same database). */
  env: Record<string, string>;
  seconds: number;
}

export function countAnswers(outcomes: DeliveryOutcome[]): Record<string, number> {
  const answers: Record<string, number> = {};
  for (const o of outcomes) if (acknowledged(o)) answers[o.body?.status ?? '?'] = (answers[o.body?.status ?? '?'] ?? 0) + 1;
  return answers;
}

/**
 * Seeds a scenario, starts `processes` server processes on the database (one migration first,
 * by `billing-admin db migrate`, never by the servers themselves when there are several), sends
 * the load spread over them, resends what was not acknowledged, and compares with the model.
 */
export async function exactlyOnceRun(
  databaseUrl: string,
  opts: { seed: number; total: number; processes: number; env?: Record<string, string> },
): Promise<LoadRun> {
  const started = performance.now();
  const scenario = buildScenario(opts.seed, opts.total);
  const env = baseEnv(databaseUrl);
  const several = opts.processes > 1;
  if (several) {
    const migrated = await runCli(['db', 'migrate'], env);
    if (migrated.code !== 0) throw new Error(`db migrate failed: ${migrated.stderr}`);
  }
  await seedScenario(databaseUrl, scenario, { migrate: !several });
  const servers: ServerProcess[] = [];
  try {
    for (let i = 0; i < opts.processes; i++) {
      servers.push(await startServerProcess({ databaseUrl, env: { ...PRODUCTION_ENV, MIGRATE_ON_START: several ? 'false' : 'true', ...opts.env } }));
    }
    const urls = servers.map((s) => s.url);
    const first = await deliver(urls, scenario.deliveries, { concurrency: 32 });
    const { all, unacknowledged } = await deliverUntilAcknowledged(urls, scenario.deliveries, first);
    if (unacknowledged.length > 0) throw new Error(`${unacknowledged.length} notifications were never acknowledged`);
    const report = await compareWithModel(databaseUrl, scenario);
    return {
      scenario,
      report,
      answers: countAnswers(all),
      firstRoundFailures: first.filter((o) => !acknowledged(o)).map((o) => `${o.index}: ${o.status ?? 'no answer'} ${JSON.stringify(o.body)}`),
      env,
      seconds: (performance.now() - started) / 1000,
    };
  } finally {
    for (const s of servers) await s.stop();
  }
}

export interface CrashRun {
  scenario: Scenario;
  report: StateReport;
  env: Record<string, string>;
  /** The server was still answering (requests in flight) when it was killed. */
  killedWhileBusy: boolean;
  unansweredBeforeRestart: number;
  /** webhook_log_ids answered with a 2xx before the crash that are not in the database. */
  acknowledgedLogsMissing: string[];
  /** `billing-admin webhooks replay --status received,failed` after the restart. */
  replay: CliResult;
}

/**
 * Sends the load, kills the server with SIGKILL once `killAfter` answers came back, restarts it,
 * resends what got no 2xx (as the gateway would), replays received/failed logs, and compares.
 */
export async function crashRun(databaseUrl: string, opts: { seed: number; total: number; killAfter: number }): Promise<CrashRun> {
  const scenario = buildScenario(opts.seed, opts.total);
  const env = baseEnv(databaseUrl);
  await seedScenario(databaseUrl, scenario);
  const first = await startServerProcess({ databaseUrl, env: PRODUCTION_ENV });
  let killedWhileBusy = false;
  let killing: Promise<void> | null = null;
  const outcomes = await deliver([first.url], scenario.deliveries, {
    concurrency: 32,
    onAnswer: (answered) => {
      if (answered === opts.killAfter && !killing) {
        killedWhileBusy = first.child.exitCode === null;
        killing = first.kill();
      }
    },
  });
  await (killing ?? first.kill());

  const acked = outcomes.filter(acknowledged);
  const ids = acked.map((o) => o.body?.webhook_log_id).filter((id): id is string => typeof id === 'string');
  const found = await existingLogIds(databaseUrl, ids);
  const acknowledgedLogsMissing = ids.filter((id) => !found.has(id));
  if (ids.length !== acked.length) acknowledgedLogsMissing.push(`${acked.length - ids.length} acknowledgements without a webhook_log_id`);

  const second = await startServerProcess({ databaseUrl, env: PRODUCTION_ENV });
  try {
    const resent = await deliverUntilAcknowledged([second.url], scenario.deliveries, outcomes, { rounds: 10 });
    if (resent.unacknowledged.length > 0) throw new Error(`${resent.unacknowledged.length} notifications were never acknowledged after the restart`);
    const replay = await runCli(['webhooks', 'replay', '--reason', 'test: audited change', '--status', 'received,failed', '--json'], env);
    const report = await compareWithModel(databaseUrl, scenario);
    return {
      scenario,
      report,
      env,
      killedWhileBusy,
      unansweredBeforeRestart: outcomes.filter((o) => !acknowledged(o)).length,
      acknowledgedLogsMissing,
      replay,
    };
  } finally {
    await second.stop();
  }
}

/** The promises of a load run on a healthy database: all acknowledged, each effect once, ledgers sound. */
export async function expectExactlyOnce(run: LoadRun): Promise<void> {
  expect(run.firstRoundFailures, 'answers other than 2xx while the database was healthy').toEqual([]);
  expect(run.report.mismatches).toEqual([]);
  // Every distinct notification was processed by exactly one request; the rest were duplicates.
  expect(run.answers.ok).toBe(run.scenario.expected.distinct);
  expect(run.answers.duplicate).toBe(run.scenario.deliveries.length - run.scenario.expected.distinct);
  const verify = await runCli(['wallet', 'verify', '--json'], run.env);
  expect(verify.code, verify.stderr).toBe(0);
}

/** The promises of a crash run: nothing acknowledged lost, replay clean, each effect once, ledgers sound. */
export async function expectCrashSafe(run: CrashRun): Promise<void> {
  // Every webhook_log_id the server acknowledged with a 2xx before dying is in the database.
  expect(run.acknowledgedLogsMissing).toEqual([]);
  expect(run.replay.code, run.replay.stderr).toBe(0);
  expect(run.report.mismatches).toEqual([]);
  const verify = await runCli(['wallet', 'verify', '--json'], run.env);
  expect(verify.code, verify.stderr).toBe(0);
}
