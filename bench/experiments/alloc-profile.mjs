/*
 * Preloaded into the service (`BENCH_SERVER_NODE_ARGS="--import ./bench/experiments/alloc-profile.mjs"`):
 * V8's sampling heap profiler, keeping the samples of objects already collected, so the profile
 * is what was allocated (the churn the collector pays for), not what is still alive, which is
 * all `--heap-prof` keeps. Written when the process exits to `alloc-<pid>.heapprofile` in
 * ALLOC_PROFILE_DIR (default: the system's temporary directory); summarise it with
 * `npx tsx bench/experiments/alloc-summary.ts FILE`.
 */
import { Session } from 'node:inspector';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const session = new Session();
session.connect();
session.post('HeapProfiler.enable');
session.post('HeapProfiler.startSampling', { samplingInterval: 32768, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
// NOTE: the inspector answers a session of the process's own thread synchronously, so this
// completes inside the exit handler.
process.on('exit', () => {
  session.post('HeapProfiler.stopSampling', (err, result) => {
    const file = join(process.env.ALLOC_PROFILE_DIR ?? tmpdir(), `alloc-${process.pid}.heapprofile`);
    writeFileSync(file, err ? JSON.stringify({ error: err.message }) : JSON.stringify(result.profile));
  });
});
