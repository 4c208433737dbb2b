// Preloaded with --import: times every COMMIT (and, apart, every other statement's run()) that
// better-sqlite3 executes in this process, and prints the totals at exit (bench/README.md, eighth session).
import { createRequire } from 'node:module';
const require = createRequire(process.cwd() + '/package.json');
const Database = require('better-sqlite3');
const prepare = Database.prototype.prepare;
let commits = 0, ms = 0, other = 0, otherMs = 0;
Database.prototype.prepare = function (sql, ...rest) {
  const statement = prepare.call(this, sql, ...rest);
  const isCommit = /^\s*commit/i.test(sql);
  const run = statement.run;
  statement.run = function (...args) {
    const t = performance.now();
    try { return run.apply(this, args); } finally {
      const d = performance.now() - t;
      if (isCommit) { commits++; ms += d; } else { other++; otherMs += d; }
    }
  };
  return statement;
};
process.on('exit', () => process.stderr.write(`commit-timer: ${commits} commits ${ms.toFixed(0)} ms; other run() ${other} ${otherMs.toFixed(0)} ms\n`));
