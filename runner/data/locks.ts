/**
 * @module One writer at a time per data folder (docs/isolation.md, "Data folders"): runs sharing a
 * folder are serialised — queued first-come for as long as a run waits for a slot, then refused
 * BUSY — so two runs never change one folder at once. Each folder in use has a one-slot
 * admission of its own (runner/requests/admission.ts), forgotten once nothing holds or awaits it.
 */
import { RunAdmission } from '../requests/admission.js';
import type { Admission, Lease } from '../requests/admission.js';

export class DataLocks {
  private readonly folders = new Map<string, RunAdmission>();

  constructor(private readonly queueMs: number) {}

  /** `onWait` hears when the run starts waiting (another run holds the folder). */
  async acquire(key: string, leave: AbortSignal, onWait?: (at: { running: number; queued: number }) => void): Promise<Admission> {
    let folder = this.folders.get(key);
    if (folder === undefined) {
      folder = new RunAdmission({ maxRuns: 1, perClient: 1, queueMs: this.queueMs }, this.queueMs);
      this.folders.set(key, folder);
    }
    const got = await folder.acquire(key, leave, onWait);
    if (!got.ok) {
      this.forget(key, folder);
      return got;
    }
    const { lease } = got;
    return {
      ok: true,
      lease: {
        waitedMs: lease.waitedMs,
        endsBy: (at) => lease.endsBy(at),
        release: () => {
          lease.release();
          this.forget(key, folder);
        },
      },
    };
  }

  /**
   * The folder's turn only if nobody holds or awaits it now (a clear: never waits behind a run).
   * Taken in the same turn of the event loop as the look, so no run slips in between.
   */
  async tryAcquire(key: string): Promise<{ ok: true; lease: Lease } | { ok: false }> {
    if (this.folders.has(key)) return { ok: false };
    const got = await this.acquire(key, new AbortController().signal);
    return got.ok ? got : { ok: false };
  }

  private forget(key: string, folder: RunAdmission): void {
    if (folder.running === 0 && folder.queued === 0 && this.folders.get(key) === folder) this.folders.delete(key);
  }
}
