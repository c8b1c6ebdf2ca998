/**
 * `npm run outbox -- user add|passwd|remove`: operators from the command line, through the auth service.
 */
import { promptPassword, readPasswordFromStdin } from './read-password.js';
import { UsageError, type CliIo, type Command } from './command-context.js';

export const USER_USAGE = `  user add NAME [--password-stdin]      create an operator (password from a prompt or standard input)
  user passwd NAME [--password-stdin]   set an operator's password (ends the operator's sessions)
  user remove NAME                      remove an operator`;

async function readPassword(usesStdin: boolean, io: CliIo): Promise<string> {
  if (io.stdin) return readPasswordFromStdin(io.stdin);
  if (usesStdin || !process.stdin.isTTY) return readPasswordFromStdin();
  const first = await promptPassword('Password: ');
  const second = await promptPassword('Repeat password: ');
  if (first !== second) throw new UsageError('The two passwords differ; nothing was changed.');
  return first;
}

export const USER_COMMANDS: Record<string, Command> = {
  async 'user add'({ auth, needName, name, values, io, out }) {
    await auth.addOperator(needName(), await readPassword(values['password-stdin'], io));
    out(`Operator ${name} created.`);
  },
  async 'user passwd'({ auth, needName, name, values, io, out }) {
    await auth.setOperatorPassword(needName(), await readPassword(values['password-stdin'], io));
    out(`Password of ${name} changed; its sessions were ended.`);
  },
  async 'user remove'({ auth, needName, name, out }) {
    await auth.removeOperator(needName());
    out(`Operator ${name} removed.`);
  },
};
