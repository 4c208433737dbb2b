import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { serializeUser } from '../../src/http/serializers.js';
import { User } from '../../src/db/entities/user.js';
import { NotFoundError } from '../../src/domain/errors.js';
import { createUser } from '../../src/services/users/create-user.js';
import { setPassword } from '../../src/services/users/set-password.js';
import { listUsers } from '../../src/services/users/list-users.js';
import { findUserByRef } from '../../src/services/staff-queries/filters.js';
import { cliActor } from '../../src/services/audit/actor.js';
import { setUserDisabled } from '../../src/services/users/set-user-disabled.js';
import { describeRecord } from '../lookups.js';
import { CliFailure, EXIT, globalOptions, output, table, withServices } from '../runtime.js';
import { auditCliChange, withReason } from '../audit-trail.js';

/** The account as the API shows it, and whether (since when) it is disabled. */
function shownUser(user: User) {
  return { ...serializeUser(user), disabled_at: user.disabledAt?.toISOString() ?? null };
}

/** `users disable|enable <user>`: the same use case both ways, safe to run twice. */
function registerDisabling(users: Command, disabled: boolean): void {
  const verb = disabled ? 'disable' : 'enable';
  withReason(
    users
      .command(`${verb} <user>`)
      .description(
        disabled
          ? 'disable an account (username or id): it can no longer log in or use HTTP Basic, and its sessions end on every server process within a second'
          : 'enable a disabled account again (username or id); its old sessions stay ended',
      ),
  ).action(async (ref: string, opts: { reason: string }, cmd: Command) => {
      const result = await withServices(async (s) => setUserDisabled(s, cliActor(), await findUserByRef(s, ref), disabled, opts.reason));
      const { user, changed, sessionsEnded } = result;
      const state = disabled ? 'disabled' : 'enabled';
      output(
        globalOptions(cmd),
        { user: shownUser(user), changed, before: result.before?.toISOString() ?? null, after: result.after?.toISOString() ?? null, sessions_ended: sessionsEnded },
        () =>
          !changed
            ? `${user.username} is already ${state}${user.disabledAt ? ` (since ${user.disabledAt.toISOString()})` : ''}; nothing changed.`
            : `${disabled ? 'Disabled' : 'Enabled'} ${user.username} (${user.id})${disabled ? `; ${sessionsEnded} session${sessionsEnded === 1 ? '' : 's'} ended` : ''}.`,
      );
    });
}

/** The password from exactly one of --password and --password-stdin (one trailing newline dropped). */
function passwordOption(opts: { password?: string; passwordStdin?: boolean }): string {
  if (!opts.password === !opts.passwordStdin) throw new CliFailure('give exactly one of --password or --password-stdin', EXIT.usage);
  return opts.passwordStdin ? readFileSync(0, 'utf8').replace(/\r?\n$/, '') : (opts.password as string);
}

export function registerUserCommands(program: Command): void {
  const users = program.command('users').description('accounts');

  withReason(users.command('create'))
    .description('create an account')
    .requiredOption('--username <name>', 'login name')
    .option('--password <password>', 'password (prefer --password-stdin: arguments are visible to other users)')
    .option('--password-stdin', 'read the password from standard input')
    .option('--email <email>', 'email address')
    .option('--first-name <name>', 'first name')
    .option('--last-name <name>', 'last name')
    .option('--staff', 'staff account (sees every plan, passes the access middleware)')
    .action(async (opts, cmd: Command) => {
      const password = passwordOption(opts);
      const user = await withServices(async (s) => {
        const made = await createUser(s, {
          username: opts.username,
          password,
          email: opts.email,
          isStaff: Boolean(opts.staff),
          firstName: opts.firstName,
          lastName: opts.lastName,
        });
        await auditCliChange(s, { action: 'user.create', target: { type: 'user', id: made.id }, reason: opts.reason, changes: { username: [null, made.username], is_staff: [null, made.isStaff] } });
        return made;
      });
      output(globalOptions(cmd), serializeUser(user), () => `Created user ${user.username} (${user.id})${user.isStaff ? ', staff' : ''}.`);
    });

  withReason(users.command('set-password'))
    .description("give an account a new password; ends every session of the account and its cached Basic credentials on every server process within a second")
    .requiredOption('--username <name>', 'login name')
    .option('--password <password>', 'the new password (prefer --password-stdin: arguments are visible to other users)')
    .option('--password-stdin', 'read the new password from standard input')
    .action(async (opts, cmd: Command) => {
      const password = passwordOption(opts);
      const { user, sessionsEnded } = await withServices(async (s) => {
        const found = await s.em.findOne(User, { username: opts.username });
        if (!found) throw new NotFoundError(`User ${opts.username}`);
        const sessionsEnded = await setPassword(s, found, password);
        // The password itself never reaches the trail (the command line's is redacted too).
        await auditCliChange(s, { action: 'user.set_password', target: { type: 'user', id: found.id }, reason: opts.reason, changes: { sessions_ended: [null, sessionsEnded] } });
        return { user: found, sessionsEnded };
      });
      output(
        globalOptions(cmd),
        { username: user.username, id: user.id, sessions_ended: sessionsEnded },
        () => `Password changed for ${user.username}; ${sessionsEnded} session${sessionsEnded === 1 ? '' : 's'} ended.`,
      );
    });

  users
    .command('show <user>')
    .description('show an account (username or id), and whether it is disabled')
    .action(async (ref: string, _opts, cmd: Command) => {
      const shown = shownUser(await withServices((s) => findUserByRef(s, ref)));
      output(globalOptions(cmd), shown, () => describeRecord(shown));
    });

  registerDisabling(users, true);
  registerDisabling(users, false);

  users
    .command('list')
    .description('list accounts')
    .action(async (_opts, cmd: Command) => {
      const rows = (await withServices((s) => listUsers(s))).map(serializeUser);
      output(globalOptions(cmd), rows, () => table(rows, ['id', 'username', 'email', 'is_staff', 'created_at']));
    });
}
