/**
 * @module The audit log's signing key and its signed heads (docs/audit.md): an Ed25519 key made on
 * the runner's first start in its state directory (`audit.key`, 0600) and the small statement each
 * `audit.checkpoint` line signs — "line `seq` of this log has sha256 `h`, as of `ts`" — the way
 * Certificate Transparency signs a tree head. Whoever holds only the public key can check a copy.
 *
 * The key is per runner, not derived from `MCP_CONFIRM_SECRET`: that secret may sit in an
 * environment variable the launcher and the front see, and a key derived from it would let anyone
 * holding it sign heads for every replica's log; each replica writes its own log anyway, so an
 * auditor pins one public key per log (its `key_id` is in every checkpoint).
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import { closeSync, constants, linkSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { SkillMcpError } from '../../shared/errors.js';
import { openPrivateFile, readNoFollow } from '../state.js';

export const AUDIT_KEY_FILE = 'audit.key';

/** A signed head as `skill-mcp audit head` prints it and `verify --head` reads it. */
export interface SignedHead {
  v: 1;
  /** The seq of the line this head vouches for. */
  seq: number;
  /** sha256 (hex) of that line's bytes, without its newline. */
  sha256: string;
  ts: string;
  key_id: string;
  /** Ed25519 signature (base64) over {@link headStatement}. */
  sig: string;
}

/** The bytes a head's signature covers: fixed text, so nothing about JSON key order matters. */
export function headStatement(head: Pick<SignedHead, 'seq' | 'sha256' | 'ts' | 'key_id'>): Buffer {
  return Buffer.from(`skill-mcp audit head v1\nseq ${head.seq}\nsha256 ${head.sha256}\nts ${head.ts}\nkey ${head.key_id}\n`);
}

/** The first 16 hex digits of the sha256 of the public key's DER (SPKI): short, and names the key. */
export function keyIdOf(publicKey: KeyObject): string {
  return createHash('sha256')
    .update(publicKey.export({ type: 'spki', format: 'der' }))
    .digest('hex')
    .slice(0, 16);
}

export interface AuditSigner {
  keyId: string;
  publicPem: string;
  sign(head: Pick<SignedHead, 'seq' | 'sha256' | 'ts'>): SignedHead;
}

export function signerFrom(privateKey: KeyObject): AuditSigner {
  const publicKey = createPublicKey(privateKey);
  const keyId = keyIdOf(publicKey);
  return {
    keyId,
    publicPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    sign(head) {
      const whole = { v: 1 as const, ...head, key_id: keyId };
      return { ...whole, sig: sign(null, headStatement(whole), privateKey).toString('base64') };
    },
  };
}

/**
 * The runner's signing key, made on first use. Security: written to a temp file and hard-linked
 * to its name, so a runner starting at the same moment on this state directory sees the whole key
 * or none (EEXIST: it reads the one that won), and the key file is 0600, no link followed.
 */
export function loadAuditSigner(stateDir: string): AuditSigner {
  const path = join(stateDir, AUDIT_KEY_FILE);
  try {
    return signerFrom(createPrivateKey(readNoFollow(path)));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw new SkillMcpError(
        'INTERNAL',
        `${path} is not an Ed25519 private key (PEM); move it away to make a new one (old checkpoints stay checkable with the old public key)`,
        { cause: error },
      );
    }
  }
  const { privateKey } = generateKeyPairSync('ed25519');
  const tmp = `${path}.${process.pid}.tmp`;
  const fd = openPrivateFile(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC);
  try {
    writeSync(fd, privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(tmp, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    unlinkSync(tmp);
  }
  return signerFrom(createPrivateKey(readNoFollow(path)));
}

/** A public key from PEM text (SPKI), or why not. */
export function readPublicKey(pem: string): { key: KeyObject; keyId: string } | { why: string } {
  try {
    const key = createPublicKey(pem);
    if (key.asymmetricKeyType !== 'ed25519') return { why: `the key is ${key.asymmetricKeyType ?? 'not asymmetric'}, not Ed25519` };
    return { key, keyId: keyIdOf(key) };
  } catch {
    return { why: 'not a PEM public key' };
  }
}

/** Whether `head` was signed by `publicKey`. */
export function headSignedBy(head: Pick<SignedHead, 'seq' | 'sha256' | 'ts' | 'key_id' | 'sig'>, publicKey: KeyObject): boolean {
  try {
    return verify(null, headStatement(head), publicKey, Buffer.from(head.sig, 'base64'));
  } catch {
    return false;
  }
}

/** A signed head read from JSON text, or why it is not one. */
export function parseSignedHead(text: string): SignedHead | { why: string } {
  let value: Partial<SignedHead>;
  try {
    value = JSON.parse(text) as Partial<SignedHead>;
  } catch {
    return { why: 'not JSON' };
  }
  if (
    value === null ||
    typeof value !== 'object' ||
    value.v !== 1 ||
    !Number.isSafeInteger(value.seq) ||
    typeof value.sha256 !== 'string' ||
    !/^[0-9a-f]{64}$/.test(value.sha256) ||
    typeof value.ts !== 'string' ||
    typeof value.key_id !== 'string' ||
    typeof value.sig !== 'string'
  ) {
    return { why: 'not a signed head ({"v":1,"seq","sha256","ts","key_id","sig"})' };
  }
  return value as SignedHead;
}
