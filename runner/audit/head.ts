/**
 * @module `skill-mcp audit head [FILE]` and `skill-mcp audit pubkey`: the latest signed head of a
 * log (its last `audit.checkpoint`, found reading back from the end of the newest segment that has
 * one, in bounded memory), as JSON an auditor keeps and later hands to `audit verify --head`; and
 * the runner's public key as PEM (derived from its private key in the state directory).
 */
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { allSegments } from './segments.js';
import { AUDIT_KEY_FILE, type SignedHead } from './signing.js';
import { readNoFollow } from '../state.js';

const WINDOW = 1024 * 1024;

function headOf(line: string): SignedHead | undefined {
  if (!line.includes('"event":"audit.checkpoint"')) return undefined;
  try {
    const l = JSON.parse(line) as Record<string, unknown>;
    if (l['event'] !== 'audit.checkpoint') return undefined;
    return {
      v: 1,
      seq: Number(l['head_seq']),
      sha256: String(l['head_sha256']),
      ts: String(l['ts']),
      key_id: String(l['key_id']),
      sig: String(l['sig']),
    };
  } catch {
    return undefined;
  }
}

/** The last checkpoint of one file, reading windows back from its end. */
function lastHeadIn(path: string): SignedHead | undefined {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    let end = fstatSync(fd).size;
    let carry = '';
    while (end > 0) {
      const start = Math.max(0, end - WINDOW);
      const buf = Buffer.alloc(end - start);
      readSync(fd, buf, 0, buf.length, start);
      const lines = (buf.toString('latin1') + carry).split('\n');
      // The first piece may be the end of a line that starts before this window: kept for the next.
      carry = start > 0 ? lines.shift()! : '';
      for (let i = lines.length - 1; i >= 0; i--) {
        const head = headOf(Buffer.from(lines[i]!, 'latin1').toString('utf8'));
        if (head) return head;
      }
      end = start;
    }
    if (carry !== '') return headOf(Buffer.from(carry, 'latin1').toString('utf8'));
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/** The latest signed head of the log at `file` (its segments included), or undefined. */
export function latestHead(file: string): SignedHead | undefined {
  for (const path of allSegments(file).reverse()) {
    const head = lastHeadIn(path);
    if (head) return head;
  }
  return undefined;
}

export function headMain(file: string): void {
  let head: SignedHead | undefined;
  try {
    head = latestHead(file);
  } catch (error) {
    process.stderr.write(`skill-mcp audit: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? String(error)})\n`);
    process.exitCode = 1;
    return;
  }
  if (!head) {
    process.stderr.write(
      `skill-mcp audit: ${file} holds no signed checkpoint yet (the runner writes one after every decided run and at stop)\n`,
    );
    process.exitCode = 1;
    return;
  }
  process.stdout.write(`${JSON.stringify(head)}\n`);
}

export function pubkeyMain(stateDir: string): void {
  try {
    const key = createPublicKey(createPrivateKey(readNoFollow(join(stateDir, AUDIT_KEY_FILE))));
    process.stdout.write(key.export({ type: 'spki', format: 'pem' }).toString());
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    process.stderr.write(
      `skill-mcp audit: no audit signing key in ${stateDir} (${code ?? 'not a key'}); a runner makes it on its first start (set SKILL_MCP_STATE_DIR to the runner's state directory)\n`,
    );
    process.exitCode = 1;
  }
}
