/**
 * What a run's result says about its refused connections (runner/egress/refusals.ts) and the line
 * the front makes of it (server/tools/run-egress.ts): bounded however the script loops, counting
 * every refusal, and safe to show — a hostile destination string cannot break the line, smuggle a
 * terminal escape or grow the answer. The end-to-end path is test/e2e/skill-run-egress-refusals.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { MAX_EGRESS_HOST_CHARS, MAX_EGRESS_REFUSALS_LISTED } from '../../shared/protocol.js';
import { egressSummarySchema } from '../../shared/protocol-answers.js';
import { refusalTally, splitDestination } from '../../runner/egress/refusals.js';
import { egressLine } from '../../server/tools/run-egress.js';

describe('a destination as a refusal names it', () => {
  it.each([
    ['api.example.com:443', { host: 'api.example.com', port: 443 }],
    ['[::1]:80', { host: '[::1]', port: 80 }],
    ['no-port.example', { host: 'no-port.example', port: null }],
    ['a.example:99999', { host: 'a.example:99999', port: null }],
    ['', { host: '', port: null }],
  ])('%j is %j', (destination, expected) => {
    expect(splitDestination(destination)).toEqual(expected);
  });

  it('control characters (a line break, a terminal escape) are shown escaped, never raw', () => {
    const { host } = splitDestination('evil\r\n\x1b[31mred.example:443');
    expect(host).toBe('evil\\x0d\\x0a\\x1b[31mred.example');
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the test looks for the control characters the escaping must remove
    expect(host).not.toMatch(/[\r\n\x1b]/);
    expect(splitDestination('\u00e9\u{1f600}.example').host).toBe('\\xe9\\u{1f600}.example');
  });

  it('a host longer than a DNS name can be is cut, visibly', () => {
    const { host } = splitDestination(`${'a'.repeat(5000)}:443`);
    expect(host).toHaveLength(MAX_EGRESS_HOST_CHARS);
    expect(host.endsWith('…')).toBe(true);
  });
});

describe('the tally', () => {
  it('a script looping on refusals cannot grow the list: the first distinct ones are kept, every refusal counted', () => {
    const tally = refusalTally();
    for (let i = 0; i < 5000; i++) tally.refused(`h${i % 1000}.example:443`, 'not-allowed');
    tally.allowed();
    const summary = tally.summary();
    expect(summary.refused).toHaveLength(MAX_EGRESS_REFUSALS_LISTED);
    expect(summary.refused[0]).toEqual({ host: 'h0.example', port: 443, reason: 'not-allowed', count: 5 });
    expect(summary.refusedCount).toBe(5000);
    // Listed ones keep counting; refusals of destinations past the list are counted apart.
    expect(summary.refusedUnlisted).toBe(5000 - MAX_EGRESS_REFUSALS_LISTED * 5);
    expect(summary.allowedCount).toBe(1);
    expect(egressSummarySchema.safeParse(summary).success).toBe(true);
  });

  it('the same destination refused for two reasons is two entries', () => {
    const tally = refusalTally();
    tally.refused('a.example:443', 'not-allowed');
    tally.refused('a.example:443', 'run-ended');
    tally.refused('a.example:443', 'not-allowed');
    expect(tally.summary().refused).toEqual([
      { host: 'a.example', port: 443, reason: 'not-allowed', count: 2 },
      { host: 'a.example', port: 443, reason: 'run-ended', count: 1 },
    ]);
  });

  it('a summary is a copy: counting on does not change one already handed out', () => {
    const tally = refusalTally();
    tally.refused('a.example:443', 'not-allowed');
    const first = tally.summary();
    tally.refused('a.example:443', 'not-allowed');
    expect(first.refused[0]!.count).toBe(1);
  });

  it('the protocol refuses a longer list than the bound (a front never trusts the runner to have bounded it)', () => {
    const refused = Array.from({ length: MAX_EGRESS_REFUSALS_LISTED + 1 }, (_, i) => ({
      host: `h${i}`,
      port: 443,
      reason: 'not-allowed' as const,
      count: 1,
    }));
    expect(egressSummarySchema.safeParse({ refused, refusedCount: refused.length, refusedUnlisted: 0, allowedCount: 0 }).success).toBe(
      false,
    );
  });
});

describe('the line the model reads', () => {
  it('says nothing when nothing was refused', () => {
    expect(egressLine({ refused: [], refusedCount: 0, refusedUnlisted: 0, allowedCount: 3 })).toBeUndefined();
  });

  it('names one refusal and its reason in words', () => {
    const tally = refusalTally();
    tally.refused('api.example.com:443', 'not-allowed');
    expect(egressLine(tally.summary())).toBe(
      "egress refused: api.example.com:443 (not declared or not granted). The run's egress proxy refused it (the script saw a failed connection or the proxy's 403); a run reaches only what its skill declares in mcp-host.egress and the owner grants.",
    );
  });

  it('names at most five destinations and says how many more there were, listed and not', () => {
    const tally = refusalTally();
    for (let i = 0; i < 30; i++) tally.refused(`h${i}.example:443`, 'special-address');
    tally.refused('', 'too-many-open');
    const line = egressLine(tally.summary())!;
    expect(line).toMatch(
      /^egress refused: h0\.example:443 \(a name resolving to loopback, private, link-local or metadata addresses\), h1\.example:443 .*h4\.example:443 \([^)]*\); and 15 more destinations listed in egress\.refused; 11 more connections to other destinations \(not listed\) — 31 refused connections in all\./,
    );
    expect(line).not.toContain('h5.example');
  });

  it('a connection closed at accept is "a connection", over the limit', () => {
    const tally = refusalTally();
    tally.refused('', 'too-many-open');
    expect(egressLine(tally.summary())).toMatch(/^egress refused: a connection \(over the run's limit of connections open at once\)\./);
  });
});
