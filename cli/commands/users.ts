import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { serializeUser } from '../../src/http/serializers.js';
import { createUser } from '../../src/services/users/create-user.js';
import { listUsers } from '../../src/services/users/list-users.js';
import { CliFailure, EXIT, globalOptions, output, table, withServices } from '../runtime.js';

export function registerUserCommands(program: Command): void {
  const users = program.command('users').description('accounts');

  users
    .command('create')
    .description('create an account')
    .requiredOption('--username <name>', 'login name')
    .option('--password <password>', 'password (prefer --password-stdin: arguments are visible to other users)')
    .option('--password-stdin', 'read the password from standard input')
    .option('--email <email>', 'email address')
    .option('--first-name <name>', 'first name')
    .option('--last-name <name>', 'last name')
    .option('--staff', 'staff account (sees every plan, passes the access middleware)')
    .action(async (opts, cmd: Command) => {
      if (!opts.password === !opts.passwordStdin) throw new CliFailure('give exactly one of --password or --password-stdin', EXIT.usage);
      const password: string = opts.passwordStdin ? readFileSync(0, 'utf8').replace(/\r?\n$/, '') : opts.password;
      const user = await withServices((s) =>
        createUser(s, {
          username: opts.username,
          password,
          email: opts.email,
          isStaff: Boolean(opts.staff),
          firstName: opts.firstName,
          lastName: opts.lastName,
        }),
      );
      output(globalOptions(cmd), serializeUser(user), () => `Created user ${user.username} (${user.id})${user.isStaff ? ', staff' : ''}.`);
    });

  users
    .command('list')
    .description('list accounts')
    .action(async (_opts, cmd: Command) => {
      const rows = (await withServices((s) => listUsers(s))).map(serializeUser);
      output(globalOptions(cmd), rows, () => table(rows, ['id', 'username', 'email', 'is_staff', 'created_at']));
    });
}
