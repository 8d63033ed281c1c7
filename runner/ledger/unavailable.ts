/** @module The refusal every run gets while the shared ledger (Redis) cannot say whether a token was spent. */
import { SkillMcpError } from '../../shared/errors.js';

export function ledgerUnavailable(why: string): SkillMcpError {
  return new SkillMcpError(
    'LEDGER_UNAVAILABLE',
    `the spent-token ledger this runner shares with other replicas (Redis) cannot be reached (${why}), so no script runs: without it one approval could run twice. ` +
      'Nothing ran and the approval was not used: call again with the same token once the ledger is back. ' +
      'The operator should check that Redis is running and reachable from the runner, and SKILL_MCP_REDIS_URL (host, port, password, TLS). Reading skills still works.',
  );
}
