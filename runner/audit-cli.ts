/** @module Placeholder until the runner lands (issue 3). */
export async function auditMain(_argv: string[]): Promise<void> {
  throw new Error('the audit tool is not built yet');
}
