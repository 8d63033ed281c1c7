/**
 * @module The required fields and value rules of the SARIF 2.1.0 schema
 * (sarif-schema-2.1.0.json, OASIS errata01) for the parts `skill-mcp check` writes, checked without
 * the network: sarifLog {version "2.1.0", runs}, run {tool}, tool {driver}, toolComponent {name},
 * reportingDescriptor {id}, multiformatMessageString {text}, reportingConfiguration.level,
 * result {message}, message {text or id}, location/physicalLocation/artifactLocation, region
 * (1-based integers). Returns every violation as `path: what`, so a test shows all of them.
 */

const LEVELS = ['none', 'note', 'warning', 'error'];
const COLUMN_KINDS = ['utf16CodeUnits', 'unicodeCodePoints'];

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const isPositiveInt = (v: unknown): boolean => Number.isInteger(v) && (v as number) >= 1;

export function sarifViolations(log: unknown): string[] {
  const bad: string[] = [];
  const need = (cond: boolean, at: string, what: string): boolean => {
    if (!cond) bad.push(`${at}: ${what}`);
    return cond;
  };
  /** `v` as an object, or undefined after recording that it is not one. */
  const obj = (v: unknown, at: string, what = 'must be an object'): Json | undefined =>
    need(isObject(v), at, what) ? (v as Json) : undefined;
  const message = (m: unknown, at: string, required: boolean): void => {
    if (m === undefined && !required) return;
    if (!need(isObject(m), at, 'must be an object')) return;
    const msg = m as Json;
    need(typeof msg['text'] === 'string' || typeof msg['id'] === 'string', at, 'needs text or id');
  };
  const multiformat = (m: unknown, at: string): void => {
    if (m === undefined) return;
    if (need(isObject(m), at, 'must be an object')) need(typeof (m as Json)['text'] === 'string', `${at}.text`, 'is required (string)');
  };

  if (!need(isObject(log), '$', 'a SARIF log is an object')) return bad;
  const root = log as Json;
  need(root['version'] === '2.1.0', '$.version', 'must be "2.1.0"');
  if (root['$schema'] !== undefined)
    need(typeof root['$schema'] === 'string' && /^https?:\/\//.test(root['$schema']), '$.$schema', 'must be a URI');
  if (!need(Array.isArray(root['runs']), '$.runs', 'is required (array)')) return bad;
  (root['runs'] as unknown[]).forEach((run, r) => {
    const at = `$.runs[${r}]`;
    const runObj = obj(run, at);
    if (!runObj) return;
    const tool = obj(runObj['tool'], `${at}.tool`, 'is required (object)');
    if (!tool) return;
    const driver = obj(tool['driver'], `${at}.tool.driver`, 'is required (object)');
    if (!driver) return;
    need(typeof driver['name'] === 'string' && driver['name'] !== '', `${at}.tool.driver.name`, 'is required (non-empty string)');
    const rules = driver['rules'] ?? [];
    const ruleIds: string[] = [];
    if (need(Array.isArray(rules), `${at}.tool.driver.rules`, 'must be an array')) {
      (rules as unknown[]).forEach((value, i) => {
        const rat = `${at}.tool.driver.rules[${i}]`;
        const rule = obj(value, rat);
        if (!rule) return;
        need(typeof rule['id'] === 'string', `${rat}.id`, 'is required (string)');
        ruleIds.push(String(rule['id']));
        multiformat(rule['shortDescription'], `${rat}.shortDescription`);
        multiformat(rule['fullDescription'], `${rat}.fullDescription`);
        multiformat(rule['help'], `${rat}.help`);
        const config = rule['defaultConfiguration'];
        if (config !== undefined && need(isObject(config), `${rat}.defaultConfiguration`, 'must be an object')) {
          const level = (config as Json)['level'];
          if (level !== undefined)
            need(LEVELS.includes(level as string), `${rat}.defaultConfiguration.level`, `must be one of ${LEVELS.join(', ')}`);
        }
      });
    }
    if (runObj['columnKind'] !== undefined)
      need(COLUMN_KINDS.includes(runObj['columnKind'] as string), `${at}.columnKind`, `must be one of ${COLUMN_KINDS.join(', ')}`);
    const results = runObj['results'];
    if (results === undefined || results === null) return;
    if (!need(Array.isArray(results), `${at}.results`, 'must be an array')) return;
    (results as unknown[]).forEach((value, i) => {
      const qat = `${at}.results[${i}]`;
      const result = obj(value, qat);
      if (!result) return;
      message(result['message'], `${qat}.message`, true);
      if (result['level'] !== undefined)
        need(LEVELS.includes(result['level'] as string), `${qat}.level`, `must be one of ${LEVELS.join(', ')}`);
      if (result['ruleIndex'] !== undefined) {
        const index = result['ruleIndex'];
        if (
          need(Number.isInteger(index) && (index as number) >= -1, `${qat}.ruleIndex`, 'must be an integer >= -1') &&
          (index as number) >= 0
        ) {
          need(ruleIds[index as number] === result['ruleId'], `${qat}.ruleIndex`, 'must point at the rule whose id is ruleId');
        }
      }
      if (result['ruleId'] !== undefined) need(typeof result['ruleId'] === 'string', `${qat}.ruleId`, 'must be a string');
      const locations = result['locations'] ?? [];
      if (!need(Array.isArray(locations), `${qat}.locations`, 'must be an array')) return;
      (locations as unknown[]).forEach((value, l) => {
        const lat = `${qat}.locations[${l}]`;
        const location = obj(value, lat);
        if (!location || location['physicalLocation'] === undefined) return;
        const physical = obj(location['physicalLocation'], `${lat}.physicalLocation`);
        if (!physical) return;
        // physicalLocation: anyOf [address] or [artifactLocation].
        if (
          !need(
            isObject(physical['artifactLocation']) || isObject(physical['address']),
            `${lat}.physicalLocation`,
            'needs artifactLocation or address',
          )
        )
          return;
        const artifact = physical['artifactLocation'];
        if (isObject(artifact) && artifact['uri'] !== undefined) {
          const uri = artifact['uri'];
          need(
            typeof uri === 'string' && !/\s/.test(uri) && isUriReference(uri),
            `${lat}.physicalLocation.artifactLocation.uri`,
            'must be a URI reference',
          );
        }
        if (physical['region'] === undefined) return;
        const region = obj(physical['region'], `${lat}.physicalLocation.region`);
        if (!region) return;
        for (const key of ['startLine', 'startColumn', 'endLine', 'endColumn']) {
          if (region[key] !== undefined)
            need(isPositiveInt(region[key]), `${lat}.physicalLocation.region.${key}`, 'must be an integer >= 1');
        }
      });
    });
  });
  return bad;
}

/** A relative or absolute URI reference (RFC 3986): resolvable against a base without change of meaning. */
function isUriReference(uri: string): boolean {
  try {
    new URL(uri, 'file:///base/');
    return !/[^A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=%]/.test(uri);
  } catch {
    return false;
  }
}
