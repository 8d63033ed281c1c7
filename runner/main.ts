/** @module Placeholder until the runner lands (issue 3). */
export async function runnerMain(_argv: string[], _options: { bundledSkills: string }): Promise<void> {
  throw new Error('the runner is not built yet');
}
