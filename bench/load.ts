/**
 * The load generator, run as its own process so it does not share a core's event loop with
 * the server. Reads a JSON job from the file named by argv[2], runs autocannon (warm-up, then `runs` fixed-length
 * runs) and prints the per-run figures as JSON on stdout.
 */
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';

interface Job {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  /** A fixed body, or a list of bodies sent round-robin (one per request, never reused). */
  body?: string;
  bodies?: string[];
  connections: number;
  /** Requests a second across all connections (autocannon's overallRate); unset: as fast as answered. */
  overallRate?: number;
  durationSeconds: number;
  warmupSeconds: number;
  runs: number;
}

interface RunFigures {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

const job = JSON.parse(readFileSync(process.argv[2], 'utf8')) as Job;
let next = 0;

function once(durationSeconds: number): Promise<RunFigures> {
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: job.url,
        method: (job.method ?? 'GET') as 'GET',
        headers: job.headers,
        body: job.body,
        connections: job.connections,
        ...(job.overallRate ? { overallRate: job.overallRate } : {}),
        duration: durationSeconds,
        requests: job.bodies
          ? [
              {
                setupRequest: (req) => {
                  const body = job.bodies![next % job.bodies!.length];
                  next += 1;
                  return { ...req, body };
                },
              },
            ]
          : undefined,
      },
      (err, result) => {
        if (err) return reject(err);
        resolve({
          requestsPerSecond: result.requests.average,
          p50: result.latency.p50,
          p99: result.latency.p99,
          non2xx: result.non2xx,
          errors: result.errors + result.timeouts,
        });
      },
    );
    void instance;
  });
}

if (job.warmupSeconds > 0) await once(job.warmupSeconds);
const runs: RunFigures[] = [];
for (let i = 0; i < job.runs; i++) runs.push(await once(job.durationSeconds));
process.stdout.write(JSON.stringify({ runs, requestsSent: next }));
