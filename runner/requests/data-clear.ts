/**
 * @module `data-clear`: a person empties their own data folder of a skill (docs/isolation.md, "Data
 * folders"), re-checked here from scratch like a run. The request names a skill only — never a
 * folder: the folder is the one a run of that skill by this caller would get (derived as a run is,
 * so the skill must be granted to this caller, and the folder is `<skill>/<who>` of this caller's
 * subject). Without a token: a preview and a token bound to that folder. With one (a person
 * confirmed): the token checked and spent, the folder's turn taken without waiting (BUSY while a
 * run holds it), the folder emptied without following a link (runner/data/clear.ts), its record
 * rewritten (a folder over its quota runs again), and one `data.clear` audit line.
 */
import { lstatSync } from 'node:fs';
import { join } from 'node:path';
import type { ErrorCode } from '../../shared/errors.js';
import { isSkillMcpError } from '../../shared/errors.js';
import type { DataClearResult, Refusal, RunnerRequest } from '../../shared/protocol.js';
import { clearHash, mintBound, sameRequester, tokenLogId, verifyToken } from '../../shared/token.js';
import type { AuditLog } from '../audit/log.js';
import type { AuditEvent, RunWho } from '../audit/events.js';
import type { TokenLedger } from '../ledger/types.js';
import { emptyFolder } from '../data/clear.js';
import { openDataFolder, readDataRecord, writeDataRecord } from '../data/folder.js';
import type { DataPlace } from '../data/folder.js';
import { takeFolderTurn } from '../data/folder-turn.js';
import type { DataLocks } from '../data/locks.js';
import { contentInPlace, declaredScripts, deriveRun, findSkill, onceContent } from './derive.js';
import type { DeriveContext } from './derive.js';

export type ClearRequest = Extract<RunnerRequest, { type: 'data-clear' }>;
type Answer = { ok: true; result: DataClearResult } | { ok: false; error: Refusal };

export interface ClearDeps {
  ctx: DeriveContext;
  key: Buffer;
  ttlMs: number;
  ledger: TokenLedger;
  audit: AuditLog;
  data: DataPlace | undefined;
  locks: DataLocks;
}

const refuse = (code: ErrorCode, message: string): Answer => ({ ok: false, error: { code, message } });

const BUSY =
  'a run is using this data folder (one writer at a time); nothing was removed and the confirmation still holds: call skill_data_clear again with the same confirmToken once the run has ended';

/**
 * The caller's folder of `skill`, as a run of it by this caller would get it. Security: derived
 * like a run (visibility, the grant for this identity, the declaration's `data:`), and named by the
 * caller's own subject — a request cannot name another subject's folder at all.
 */
async function folderOf(
  ctx: DeriveContext,
  req: ClearRequest,
): Promise<{ key: [string, string]; quota: { bytes: number; files: number } } | { code: ErrorCode; message: string }> {
  const skill = await findSkill(ctx, req.skill);
  if (skill === undefined)
    return { code: 'UNKNOWN_SKILL', message: `no skill named ${JSON.stringify(req.skill)} is served; skill_list shows the names` };
  const readOnce = onceContent(contentInPlace(ctx), skill);
  const { scripts } = await declaredScripts(ctx, skill, readOnce);
  let refused: { code: ErrorCode; message: string } | undefined;
  for (const declared of scripts) {
    const derived = await deriveRun(ctx, {
      skill: skill.name,
      script: declared.script,
      args: [],
      known: skill,
      content: { read: readOnce },
      caller: req.identity,
    });
    if (derived.ok && derived.plan.data) return derived.plan.data;
    if (!derived.ok) refused ??= { code: derived.code, message: derived.message };
  }
  if (refused?.code === 'NOT_GRANTED' || refused?.code === 'UNKNOWN_SKILL') return refused;
  return {
    code: 'NO_DATA_FOLDER',
    message: `skill "${skill.name}" keeps no data folder for you here (it declares no data:, or none of its scripts can run for you${refused ? `: ${refused.message}` : ''}); there is nothing to clear`,
  };
}

export async function clearData(deps: ClearDeps, req: ClearRequest, who: RunWho): Promise<Answer> {
  const { data } = deps;
  if (data === undefined) return refuse('NO_DATA_FOLDER', 'this runner keeps no data folders; there is nothing to clear');
  const found = await folderOf(deps.ctx, req);
  if ('code' in found) return refuse(found.code, found.message);
  const folder = found.key.join('/');
  const bound = clearHash(folder);
  const record = readDataRecord(data.base, found.key);
  const used = record ? { bytes: record.bytes, entries: record.entries, full: record.full } : undefined;
  if (req.confirmToken === undefined) {
    const { token, claims } = mintBound(deps.key, bound, Date.now(), deps.ttlMs, req.identity?.subject);
    return {
      ok: true,
      result: {
        skill: found.key[0],
        folder,
        ...(used ? { used } : {}),
        confirmToken: token,
        expiresAt: new Date(claims.exp).toISOString(),
      },
    };
  }
  type ClearLine = Extract<AuditEvent, { event: 'data.clear' }>;
  const line = (fields: Omit<ClearLine, 'event' | 'skill' | 'data_folder'>): ClearLine => ({
    event: 'data.clear',
    skill: found.key[0],
    data_folder: folder,
    ...fields,
    ...who,
  });
  // Security: MAC first, then whose it is, then what it is bound to, then the ledger and expiry —
  // as a run's token (service.ts); a refusal before the spend keeps the confirmation.
  const verified = verifyToken(deps.key, req.confirmToken, Date.now(), deps.ttlMs);
  if (!verified.ok && verified.code === 'TOKEN_INVALID')
    return refuse(
      'TOKEN_INVALID',
      'the confirmation token is not one this runner issued; call skill_data_clear without a token for a fresh one',
    );
  const claims = verified.claims!;
  const tokenId = tokenLogId(claims);
  const refused = async (reason: string, code: ErrorCode, message: string): Promise<Answer> => {
    await deps.audit.append(line({ refused: reason, token_id: tokenId }));
    return refuse(code, message);
  };
  if (!sameRequester(claims, req.identity?.subject))
    return refused(
      'token-invalid',
      'TOKEN_INVALID',
      'this confirmation token was issued to another identity; ask for a confirmation of your own',
    );
  if (claims.wr !== bound)
    return refused(
      'token-invalid',
      'TOKEN_INVALID',
      'this confirmation token was not issued to clear this data folder; call skill_data_clear without a token for a fresh one',
    );
  let spent: Awaited<ReturnType<TokenLedger['spend']>>;
  // The folder's turn now or never: a clear never waits behind a run, and no run starts during it.
  const turn = await deps.locks.tryAcquire(folder);
  if (!turn.ok) return refused('busy', 'BUSY', BUSY);
  const gives: (() => void | Promise<void>)[] = [() => turn.lease.release()];
  try {
    const fileTurn = takeFolderTurn(data.base, found.key);
    if (!fileTurn.ok) return await refused('busy', 'BUSY', BUSY);
    gives.unshift(fileTurn.give);
    const shared = await data.shared?.take(folder, new AbortController().signal, 0);
    if (shared !== undefined && !shared.ok)
      return await refused(
        shared.why === 'down' ? 'ledger-unavailable' : 'busy',
        shared.why === 'down' ? 'LEDGER_UNAVAILABLE' : 'BUSY',
        shared.why === 'down' ? `the Redis its replicas share cannot be reached (${shared.detail}); nothing was removed` : BUSY,
      );
    if (shared !== undefined) gives.unshift(shared.give);
    if (!deps.audit.available)
      return refuse(
        'AUDIT_UNAVAILABLE',
        'the audit log cannot be written, so nothing is removed; nothing was removed and the confirmation still holds',
      );
    try {
      spent = await deps.ledger.spend(claims.jti, claims.exp, Date.now());
    } catch (error) {
      if (isSkillMcpError(error) && error.code === 'LEDGER_UNAVAILABLE')
        return await refused('ledger-unavailable', 'LEDGER_UNAVAILABLE', error.message);
      throw error;
    }
    if (spent === 'reused')
      return await refused(
        'token-reused',
        'TOKEN_REUSED',
        'this confirmation was used already; each clears once — ask again without a token',
      );
    if (spent === 'expired')
      return await refused('token-expired', 'TOKEN_EXPIRED', 'the confirmation expired; ask again without a token for a fresh one');
    const dir = join(data.base, ...found.key);
    // A folder no run made yet holds nothing: nothing is made to be emptied.
    const cleared =
      lstatSync(dir, { throwIfNoEntry: false }) === undefined
        ? { removed: { bytes: 0, entries: 0 }, left: { bytes: 0, entries: 0 }, measured: true, note: undefined }
        : await emptyFolder(dir, openDataFolder(data, found.key).gid);
    const { removed, left, note } = cleared;
    const quota = found.quota;
    // Security: a folder that could not be measured after is treated as full, as after a run.
    const full = !cleared.measured || left.bytes > quota.bytes || left.entries > quota.files;
    writeDataRecord(data.base, found.key, { bytes: left.bytes, entries: left.entries, full, quota });
    await deps.audit.commit(
      line({
        token_id: tokenId,
        entries_removed: removed.entries,
        bytes_removed: removed.bytes,
        entries_left: left.entries,
        bytes_left: left.bytes,
        ...(note !== undefined ? { incomplete: true } : {}),
      }),
    );
    return { ok: true, result: { skill: found.key[0], folder, removed, left, ...(note !== undefined ? { note } : {}) } };
  } finally {
    for (const give of gives) await give();
  }
}
