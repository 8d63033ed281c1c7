/**
 * @module Skill content hashed on a thread of its own. Hashing is CPU work: done on the event loop
 * (even in chunks) it keeps the thread runnable all the time, and on a loaded machine such a thread
 * waits its turn for the CPU behind everyone else — a cancel arriving meanwhile waits with it.
 * Here one worker thread reads, hashes and (for a run's copy) writes each file, by descriptor
 * (descriptors are the process's, shared by its threads); the event loop only waits for its
 * answer, and so wakes at once for a socket. Files are taken one at a time, in arrival order.
 * Files of at most 64 KiB never come here (shared/skill-content.ts reads them in one bounded read:
 * microseconds, less than the trip to this thread and back).
 */
import { Worker } from 'node:worker_threads';

/** The worker's code (CommonJS, evaluated by the worker): small, and no bundling of a second entry. */
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { readSync, writeSync } = require('node:fs');
const { createHash } = require('node:crypto');
const scratch = Buffer.allocUnsafe(1024 * 1024);
parentPort.on('message', ({ id, fd, maxBytes, outFd }) => {
  try {
    const hash = createHash('sha256');
    let size = 0;
    for (;;) {
      const got = readSync(fd, scratch, 0, scratch.length, size);
      if (got === 0) break;
      size += got;
      if (size > maxBytes) return parentPort.postMessage({ id, over: true });
      hash.update(scratch.subarray(0, got));
      if (outFd !== undefined) for (let at = 0; at < got;) at += writeSync(outFd, scratch, at, got - at);
    }
    parentPort.postMessage({ id, sha256: hash.digest('hex'), size });
  } catch (error) {
    parentPort.postMessage({ id, error: String((error && error.code) || 'error') });
  }
});
`;

type Hashed = { sha256: string; size: number } | { over: true };
interface Answer {
  id: number;
  sha256?: string;
  size?: number;
  over?: true;
  error?: string;
}

export class HashWorker {
  #worker: Worker | undefined;
  #next = 0;
  readonly #pending = new Map<number, { resolve: (h: Hashed) => void; reject: (e: Error) => void }>();

  /**
   * Hashes the open file `fd` from offset 0 to its end, writing each chunk to `outFd` too when
   * given; `over` once more than `maxBytes` were read (a file growing while it is read cannot
   * blow a cap). Rejects with the errno code when a read or write fails.
   */
  hash(fd: number, maxBytes: number, outFd?: number): Promise<Hashed> {
    const id = this.#next++;
    return new Promise<Hashed>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#thread().postMessage({ id, fd, maxBytes, ...(outFd !== undefined ? { outFd } : {}) });
    });
  }

  /** Stops the thread (a later `hash` starts another). */
  async close(): Promise<void> {
    const worker = this.#worker;
    this.#worker = undefined;
    await worker?.terminate();
  }

  #thread(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(WORKER_SOURCE, { eval: true });
    // An idle hasher never keeps the process alive.
    worker.unref();
    worker.on('message', (answer: Answer) => {
      const waiter = this.#pending.get(answer.id);
      this.#pending.delete(answer.id);
      if (!waiter) return;
      if (answer.error !== undefined)
        waiter.reject(Object.assign(new Error(`reading or copying a skill file failed (${answer.error})`), { code: answer.error }));
      else waiter.resolve(answer.over ? { over: true } : { sha256: answer.sha256!, size: answer.size! });
    });
    // A thread that died fails what it held; the next file gets a fresh one.
    const fail = (error: Error): void => {
      if (this.#worker === worker) this.#worker = undefined;
      for (const [id, waiter] of this.#pending) {
        this.#pending.delete(id);
        waiter.reject(error);
      }
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the hashing thread exited (${code})`)));
    this.#worker = worker;
    return worker;
  }
}
