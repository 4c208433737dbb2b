import pg from 'pg';

/*
 * A PostgreSQL outage on demand: cut every connection to one database, or refuse new ones for a
 * while. The admin connection goes to TEST_DATABASE_URL's own database, never the victim.
 */

export interface PgChaos {
  /** Terminates every backend connected to the database; resolves with how many. */
  cutConnections(): Promise<number>;
  /** ALLOW_CONNECTIONS false, cut everything, wait, allow again. */
  outage(ms: number): Promise<void>;
  /** ALLOW_CONNECTIONS false and cut everything: down until allow(). */
  refuse(): Promise<void>;
  allow(): Promise<void>;
  /** Cuts connections every `everyMs` until the returned stop() is called. */
  keepCutting(everyMs: number): { stop(): Promise<number> };
  close(): Promise<void>;
}

export async function pgChaos(databaseUrl: string): Promise<PgChaos> {
  const name = new URL(databaseUrl).pathname.slice(1);
  if (!/^[a-z0-9_]+$/.test(name)) throw new Error(`unexpected database name ${name}`);
  const admin = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
  await admin.connect();
  const cutConnections = async () => {
    const res = await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name]);
    return res.rowCount ?? 0;
  };
  return {
    cutConnections,
    async refuse() {
      await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
      await cutConnections();
    },
    allow: async () => void (await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`)),
    async outage(ms) {
      await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
      try {
        await cutConnections();
        await new Promise((r) => setTimeout(r, ms));
      } finally {
        await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
      }
    },
    keepCutting(everyMs) {
      let cut = 0;
      let running = true;
      const loop = (async () => {
        while (running) {
          cut += await cutConnections();
          await new Promise((r) => setTimeout(r, everyMs));
        }
      })();
      return {
        async stop() {
          running = false;
          await loop;
          return cut;
        },
      };
    },
    close: () => admin.end(),
  };
}
