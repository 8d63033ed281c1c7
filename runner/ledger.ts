/**
 * @module The durable spent-token ledger (SPEC §7): one line `<jti> <exp>` per spent token,
 * appended and fsynced before the run starts, so `TOKEN_REUSED` holds across restarts of either
 * process. Entries past their expiry are dropped when the runner starts (an expired token is
 * refused on its own), so the file stays small.
 */
import { closeSync, constants, fsyncSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { openPrivateFile } from './state.js';

export class SpentLedger {
  private readonly spent = new Map<string, number>();
  private readonly path: string;

  constructor(stateDir: string, nowMs: number) {
    this.path = join(stateDir, 'spent-tokens');
    let text = '';
    try {
      const fd = openPrivateFile(this.path, constants.O_RDONLY);
      try {
        text = readFileSync(fd, 'utf8');
      } finally {
        closeSync(fd);
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    for (const line of text.split('\n')) {
      const match = /^([A-Za-z0-9_-]{16,64}) (\d{1,16})$/.exec(line);
      if (match && Number(match[2]) > nowMs) this.spent.set(match[1]!, Number(match[2]));
    }
    this.compact();
  }

  has(jti: string): boolean {
    return this.spent.has(jti);
  }

  /** Records a token as spent; returns only once the line is on disk. */
  spend(jti: string, exp: number): void {
    const fd = openPrivateFile(this.path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT);
    try {
      writeSync(fd, `${jti} ${exp}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    this.spent.set(jti, exp);
  }

  /** Rewrites the file with live entries only (write to a temp file, fsync, rename). */
  private compact(): void {
    const tmp = `${this.path}.tmp`;
    const fd = openPrivateFile(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC);
    try {
      writeSync(fd, [...this.spent].map(([jti, exp]) => `${jti} ${exp}\n`).join(''));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, this.path);
  }
}
