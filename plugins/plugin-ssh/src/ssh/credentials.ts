import { spawn } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import type { RunDirectory } from './run-directory.js';
import type { Identity } from './ssh-config.js';

/** What a run logs in with: the endpoint's private key, or a certificate made for the run and signed by a CA key. */
export type SshCredentials = { key: string } | { certificate: { caKey: string; principals: readonly string[]; validForMs: number } };

/** Who and what a run's certificate names. */
export interface RunIdentity {
  runId: string;
  username: string;
  startedAt: Date;
}

/** Why a run's credentials cannot be used; its message names no secret and is safe for a log line. */
export class CredentialsUnusable extends Error {}

/** ssh-keygen ends within this, or it has failed. */
const KEYGEN_TIMEOUT_MS = 30_000;

/**
 * Puts a run's identity into its private directory. A key: written 0600 and read once by `ssh-keygen -y` (an
 * encrypted or malformed key is refused here, once, rather than by every node). A certificate (docs/fleet.md,
 * "Keys or certificates"): a fresh Ed25519 key pair, and a user certificate for it signed by the CA key with key id
 * `tkgate run=<run id> user=<username>`, the principals, valid from a minute before the run's start until
 * `valid_for` after it, without port, agent or X11 forwarding or a pty. With `jumps`, a second certificate of
 * the same key, id and validity for the jump hosts, which permits port forwarding and nothing else: what `-W`
 * needs there. The CA key is on disk (0600, in the private directory) only while `ssh-keygen -s` signs,
 * whatever its secret's scheme.
 */
export async function prepareIdentity(
  dir: RunDirectory,
  credentials: SshCredentials,
  run: RunIdentity,
  keygenPath: string,
  jumps = false,
): Promise<Identity & { keyId?: string }> {
  if ('key' in credentials) {
    const identityFile = await dir.write('id', withFinalNewline(credentials.key));
    await keygen(keygenPath, ['-y', '-P', '', '-f', identityFile], 'the key cannot be read (an unencrypted OpenSSH or PEM private key is needed)');
    return { identityFile };
  }
  const { caKey, principals, validForMs } = credentials.certificate;
  const identityFile = dir.file('id');
  await keygen(keygenPath, ['-q', '-t', 'ed25519', '-N', '', '-C', `tkgate run=${run.runId}`, '-f', identityFile], 'a key pair could not be made');
  const keyId = `tkgate run=${run.runId} user=${printable(run.username)}`;
  const from = new Date(run.startedAt.getTime() - 60_000);
  const to = new Date(run.startedAt.getTime() + validForMs);
  const validity = `${certificateTime(from)}:${certificateTime(to)}`;
  const sign = (publicKey: string, options: string[], what: string) =>
    keygen(
      keygenPath,
      ['-q', '-s', caFile, '-I', keyId, '-n', principals.join(','), '-V', validity, ...options.flatMap((option) => ['-O', option]), publicKey],
      `the CA key could not sign the ${what} (an unencrypted OpenSSH or PEM private key is needed)`,
    );
  // Each certificate is signed from a copy of the public key: ssh would also offer `id-cert.pub`, beside the
  // identity file, before the certificate a hop names, and a jump host would get the one without forwarding.
  const publicKey = await readFile(`${identityFile}.pub`);
  const caFile = await dir.write('ca', withFinalNewline(caKey));
  try {
    await dir.write('node.pub', publicKey);
    await sign(dir.file('node.pub'), ['no-port-forwarding', 'no-agent-forwarding', 'no-x11-forwarding', 'no-pty'], 'certificate');
    if (jumps) {
      await dir.write('jump.pub', publicKey);
      await sign(dir.file('jump.pub'), ['clear', 'permit-port-forwarding'], "jump hosts' certificate");
    }
  } finally {
    await rm(caFile, { force: true });
  }
  return { identityFile, certificateFile: dir.file('node-cert.pub'), ...(jumps ? { jumpCertificateFile: dir.file('jump-cert.pub') } : {}), keyId };
}

/** ssh-keygen's `-V` time: UTC, to the second. */
export function certificateTime(at: Date): string {
  return `${at.toISOString().replace(/[-:T]/g, '').slice(0, 14)}Z`;
}

/** A user name as the key id shows it: what sshd would log escaped (spaces, control characters) as `?`. */
const printable = (text: string) => text.replace(/[^\x21-\x7e]/g, '?');

const withFinalNewline = (text: string) => (text.endsWith('\n') ? text : `${text}\n`);

/**
 * Runs ssh-keygen without a controlling terminal (a session of its own: a key that wants a passphrase fails
 * instead of asking) and with PATH as its environment. Its stderr names files of the private directory, never a
 * key's content; it is the failure's cause (logged).
 */
function keygen(keygenPath: string, args: string[], failure: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(keygenPath, args, { env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(0, 500)));
    const timer = setTimeout(() => child.kill('SIGKILL'), KEYGEN_TIMEOUT_MS);
    child.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(new CredentialsUnusable(failure, { cause: `ssh-keygen could not be started (${err.code ?? 'error'})` }));
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new CredentialsUnusable(failure, { cause: stderr.trim() || `ssh-keygen exited with ${code}` }));
    });
  });
}
