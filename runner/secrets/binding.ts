/**
 * @module What the rooms agree on about a run's secrets (issue 30; docs/secrets.md once written):
 * a declared secret, once granted and resolved for the caller, becomes one {@link SecretBinding}
 * for the run. The script's environment holds only `placeholder`; the run's egress proxy swaps it
 * for `value` in the declared header of requests to `hosts`; redaction (the second wall) searches
 * everything the run returns for every {@link RedactionValue}.
 *
 * Security: `value` lives in the runner's memory only — never in a result, an audit line, a file
 * the sandbox can read, or the script's environment.
 */

/** One secret as a run uses it. */
export interface SecretBinding {
  /** The declared name (also the variable the script gets, holding the placeholder). */
  name: string;
  /** Canonical egress entries (`host:port`, shared/egress.ts) the value is injected for: declared ∩ granted, each also in the run's egress. */
  hosts: string[];
  /** The request header the value goes in (e.g. `Authorization`). */
  header: string;
  /** The header's value, with `{value}` where the secret goes (e.g. `Bearer {value}`). */
  format: string;
  /** What the script holds instead of the value: per run, random, of the documented shape. */
  placeholder: string;
  /** The secret itself (runner memory only). */
  value: string;
}

/** A value redaction searches for in what a run returns, and the name it is replaced by (`[secret:NAME]`). */
export interface RedactionValue {
  name: string;
  value: string;
}
