/**
 * @module The live-catalog scenario, shared by the stdio and HTTP suites: a running server, a
 * real client listening for `list_changed`, and the ways people change skill folders (add a skill,
 * edit a file, remove a skill, rename a folder, save through an atomic rename, a burst of 500
 * writes). Every step waits for the notification (an event, with a generous deadline), then checks
 * what clients see against the disk: listings, digests, search.
 */
import { createHash } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ProtocolError } from '@modelcontextprotocol/client';
import { callTool, rpc, skillList } from './harness.js';

/** How long a change may take to reach a client before the test fails (machines are shared and busy). */
export const SEEN_WITHIN_MS = 20_000;

export interface LiveServer {
  /** The client that listens for change notifications (2025: as sent; 2026-07-28: on a listen stream). */
  client: Client;
  close(): Promise<void>;
}

const sha256 = (bytes: Uint8Array): string => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

export function writeSkill(root: string, name: string, description: string, files: Record<string, string> = {}): void {
  mkdirSync(join(root, name), { recursive: true });
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(root, name, path, '..'), { recursive: true });
    writeFileSync(join(root, name, path), text);
  }
  writeFileSync(
    join(root, name, 'SKILL.md'),
    `---\nname: ${name}\ndescription: ${JSON.stringify(description)}\n---\n\n# ${name}\n\n## Usage\n\nRead references/notes.md.\n`,
  );
}

/** Counts `notifications/resources/list_changed` and `.../prompts/list_changed` and lets a test await the next. */
export class ChangeCounter {
  resources = 0;
  prompts = 0;
  #waiters = new Set<() => void>();

  constructor(client: Client) {
    client.setNotificationHandler('notifications/resources/list_changed', () => {
      this.resources++;
      for (const check of this.#waiters) check();
    });
    client.setNotificationHandler('notifications/prompts/list_changed', () => {
      this.prompts++;
      for (const check of this.#waiters) check();
    });
  }

  /** Runs `change`, then resolves once both notifications came after it. */
  async after(change: () => void | Promise<void>): Promise<void> {
    const [resources, prompts] = [this.resources, this.prompts];
    await change();
    await this.until(async () => this.resources > resources && this.prompts > prompts, 'list_changed');
  }

  /** Resolves once `holds()` is true, asking again at each notification (no sleeps); rejects after the deadline. */
  until(holds: () => Promise<boolean>, what: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let asking = false;
      let again = false;
      const check = (): void => {
        if (asking) {
          again = true;
          return;
        }
        asking = true;
        void holds().then(
          (ok) => {
            asking = false;
            if (ok) {
              this.#waiters.delete(check);
              clearTimeout(timer);
              resolve();
            } else if (again) {
              again = false;
              check();
            }
          },
          (error: unknown) => {
            this.#waiters.delete(check);
            clearTimeout(timer);
            reject(error);
          },
        );
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(check);
        reject(
          new Error(`${what}: not within ${SEEN_WITHIN_MS} ms (list_changed so far: resources ${this.resources}, prompts ${this.prompts})`),
        );
      }, SEEN_WITHIN_MS);
      this.#waiters.add(check);
      check();
    });
  }
}

/** Overwrites the start of a file in one write(2), no truncation first: one change event, whatever the machine's load. */
export function overwriteInPlace(path: string, text: string): void {
  const fd = openSync(path, 'r+');
  try {
    writeSync(fd, text, 0);
  } finally {
    closeSync(fd);
  }
}

interface Entry {
  uri: string;
  frontmatter: Record<string, unknown>;
  resources: { uri: string; digest: string; size: number }[];
}

/** A full skills/list walk; a walk refused because the catalog changed under it starts over. */
export async function walkSkills(client: Client): Promise<{ entries: Entry[]; restarts: number }> {
  let restarts = 0;
  for (;;) {
    const entries: Entry[] = [];
    let cursor: string | undefined;
    try {
      do {
        const page = await rpc(client, 'skills/list', cursor === undefined ? {} : { cursor });
        entries.push(...(page['skills'] as Entry[]));
        cursor = page['nextCursor'] as string | undefined;
      } while (cursor !== undefined);
      return { entries, restarts };
    } catch (error) {
      if (!(error instanceof ProtocolError) || error.code !== -32602 || !/catalog changed/.test(error.message)) throw error;
      restarts++;
    }
  }
}

/** Every file of a skill folder as `/`-separated paths (no links, no hidden files here). */
function filesOnDisk(dir: string, rel = ''): string[] {
  return readdirSync(join(dir, rel), { withFileTypes: true })
    .filter((e) => !e.name.startsWith('.'))
    .flatMap((e) => {
      const path = rel ? `${rel}/${e.name}` : e.name;
      return e.isDirectory() ? filesOnDisk(dir, path) : [path];
    });
}

/** The listing equals the disk: the skills, each file, each digest and size. */
export async function expectListingMatchesDisk(client: Client, root: string, published: string[]): Promise<void> {
  const { entries } = await walkSkills(client);
  expect(entries.map((e) => e.uri)).toEqual(published.sort().map((n) => `skill://${n}/SKILL.md`));
  for (const entry of entries) {
    const name = /^skill:\/\/([^/]+)\//.exec(entry.uri)![1]!;
    const onDisk = filesOnDisk(join(root, name)).sort();
    expect(
      entry.resources.map((r) => r.uri),
      name,
    ).toEqual(onDisk.map((p) => `skill://${name}/${p}`));
    for (const resource of entry.resources) {
      const path = join(root, name, resource.uri.slice(`skill://${name}/`.length));
      const bytes = readFileSync(path);
      expect({ uri: resource.uri, digest: resource.digest, size: resource.size }).toEqual({
        uri: resource.uri,
        digest: sha256(bytes),
        size: statSync(path).size,
      });
    }
  }
}

async function searchNames(client: Client, query: string): Promise<string[]> {
  const answer = await callTool(client, 'skill_search', { query, limit: 3 });
  expect(answer.isError, answer.text).toBe(false);
  return (answer.value['results'] as { name: string }[]).map((r) => r.name);
}

/**
 * Defines the scenario's tests. `start(root)` starts a server on `root` (already holding alpha,
 * beta and gamma), waits until it watches, and connects the listening client.
 */
export function defineLiveScenario(
  title: string,
  makeRoot: () => string,
  start: (root: string) => Promise<LiveServer>,
  more?: (get: () => { root: string; server: LiveServer; counter: ChangeCounter }) => void,
): void {
  describe(title, () => {
    let root: string;
    let trash: string;
    let server: LiveServer;
    let counter: ChangeCounter;
    /** Changes made so far, each to be announced exactly once. */
    let changes = 0;
    const change = async (work: () => void | Promise<void>): Promise<void> => {
      changes++;
      await counter.after(work);
    };

    const BULK = Array.from({ length: 10 }, (_, i) => `bulk-${i}`);
    beforeAll(async () => {
      root = makeRoot();
      mkdirSync(root, { recursive: true });
      trash = `${root}-trash`;
      mkdirSync(trash);
      for (const name of ['alpha', 'beta', 'gamma', ...BULK])
        writeSkill(root, name, `The ${name} skill for testing.`, { 'references/notes.md': `${name} notes\n` });
      server = await start(root);
      counter = new ChangeCounter(server.client);
    });
    afterAll(async () => {
      await server?.close();
    });

    // Each counted change is one system call (a rename, one write), so it settles as one change
    // whatever the machine's load; the burst is counted apart.
    test('a skill moved into the folder is listed, digested and searchable', async () => {
      writeSkill(trash, 'invoice-reader', 'Reads supplier invoices and pulls out totals, dates and VAT.', {
        'references/notes.md': 'fields\n',
      });
      await change(() => renameSync(join(trash, 'invoice-reader'), join(root, 'invoice-reader')));
      await expectListingMatchesDisk(server.client, root, ['alpha', 'beta', 'gamma', 'invoice-reader', ...BULK]);
      expect(await searchNames(server.client, 'extract the VAT from an invoice')).toContain('invoice-reader');
      expect((await skillList(server.client)).skills.map((s) => s.name)).toContain('invoice-reader');
    });

    test('an edited file is listed under its new digest without anyone reading it first', async () => {
      await change(() => overwriteInPlace(join(root, 'alpha', 'references', 'notes.md'), 'alpha notes, edited and longer\n'));
      await expectListingMatchesDisk(server.client, root, ['alpha', 'beta', 'gamma', 'invoice-reader', ...BULK]);
    });

    test('a skill moved out (to the trash) is gone from every list, and loading it says so', async () => {
      await change(() => renameSync(join(root, 'beta'), join(trash, 'beta')));
      await expectListingMatchesDisk(server.client, root, ['alpha', 'gamma', 'invoice-reader', ...BULK]);
      expect((await skillList(server.client)).skills.map((s) => s.name)).not.toContain('beta');
      const prompts = await rpc(server.client, 'prompts/list');
      expect((prompts['prompts'] as { name: string }[]).map((p) => p.name)).not.toContain('beta');
      const load = await callTool(server.client, 'skill_load', { name: 'beta' });
      expect(load.value['error']).toMatchObject({ code: 'UNKNOWN_SKILL' });
    });

    test('a renamed skill folder is served under its new name (the old one is gone), with the name mismatch reported', async () => {
      await change(() => renameSync(join(root, 'gamma'), join(root, 'delta')));
      const list = await skillList(server.client);
      expect(list.skills.map((s) => s.name)).toEqual(['alpha', ...BULK, 'delta', 'invoice-reader'].sort());
      expect(list.problems).toContainEqual(expect.objectContaining({ path: expect.stringContaining('delta'), reason: 'name-mismatch' }));
      // "delta" says it is "gamma": not publishable, so skill:// drops it.
      await expectListingMatchesDisk(server.client, root, ['alpha', 'invoice-reader', ...BULK]);
    });

    test('a renamed folder inside a skill moves its files in the manifest', async () => {
      await change(() => renameSync(join(root, 'bulk-0', 'references'), join(root, 'bulk-0', 'docs')));
      await expectListingMatchesDisk(server.client, root, ['alpha', 'invoice-reader', ...BULK]);
    });

    test('a SKILL.md saved through an atomic rename (as editors do) is seen: new description, digest and search', async () => {
      const path = join(root, 'alpha', 'SKILL.md');
      const temp = join(root, 'alpha', '.SKILL.md.swp');
      writeFileSync(
        temp,
        readFileSync(path, 'utf8').replace('The alpha skill for testing.', 'Converts temperatures between Celsius and Fahrenheit.'),
      );
      await change(() => renameSync(temp, path));
      await expectListingMatchesDisk(server.client, root, ['alpha', 'invoice-reader', ...BULK]);
      expect(await searchNames(server.client, 'convert fahrenheit to celsius')).toEqual(['alpha']);
      const load = await callTool(server.client, 'skill_load', { name: 'alpha' });
      expect(load.value['description']).toBe('Converts temperatures between Celsius and Fahrenheit.');
    });

    test('a burst of 500 writes: walks taken meanwhile never repeat or miss a skill, and the end state is listed exactly', async () => {
      const served = ['alpha', ...BULK, 'delta', 'invoice-reader'].sort();
      const published = served.filter((n) => n !== 'delta');
      let writing = true;
      const burst = (async () => {
        for (let i = 0; i < 500; i++) {
          const name = BULK[i % BULK.length]!;
          mkdirSync(join(root, name, 'notes'), { recursive: true });
          writeFileSync(join(root, name, 'notes', `file-${Math.floor(i / BULK.length)}.md`), `write ${i}\n`.repeat(1 + (i % 7)));
          // Spread the writes over many event-loop turns, so walks interleave with them.
          if (i % 10 === 9) await new Promise((resolve) => setImmediate(resolve));
        }
        writing = false;
      })();
      const announcedBefore = counter.resources;
      let walks = 0;
      while (writing || walks === 0) {
        const got = (await skillList(server.client)).skills.map((s) => s.name);
        expect(new Set(got).size, 'no skill twice').toBe(got.length);
        expect(got).toEqual(served);
        const uris = (await walkSkills(server.client)).entries.map((e) => e.uri);
        expect(new Set(uris).size, 'no entry twice').toBe(uris.length);
        expect(uris).toEqual(published.map((n) => `skill://${n}/SKILL.md`));
        walks++;
      }
      await burst;
      // Settled: asked again at each announcement until the listing is the disk's.
      await counter.until(async () => {
        try {
          await expectListingMatchesDisk(server.client, root, published);
          return true;
        } catch {
          return false;
        }
      }, 'the listing after the burst');
      const burstAnnouncements = counter.resources - announcedBefore;
      expect(burstAnnouncements, 'the burst is announced as it settles, not per write').toBeGreaterThanOrEqual(1);
      expect(burstAnnouncements).toBeLessThanOrEqual(30);
      changes += burstAnnouncements;
    });

    test('each settled change was announced exactly once, and nothing crashed', async () => {
      // A sentinel change: a late announcement of anything before it would arrive before its own.
      await change(() => overwriteInPlace(join(root, 'delta', 'references', 'notes.md'), 'the sentinel, longer than before\n'));
      expect(counter.resources).toBe(changes);
      expect(counter.prompts).toBe(changes);
      expect((await skillList(server.client)).skills).toHaveLength(13);
    });

    more?.(() => ({ root, server, counter }));
  });
}
