/**
 * Checks an OCSF event against the class facts of test/fixtures/ocsf-1.3.0.json: the base event's
 * required attributes, the class's (and its category and activity), the `just_one` constraints,
 * `type_uid`, and every nested object's required attributes and `at_least_one` constraints.
 * Returns what is wrong, empty when the event is valid.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

interface Facts {
  version: string;
  base: { required: string[]; severity_id: number[]; status_id: number[] };
  classes: Record<string, { name: string; category_uid: number; activity_id: number[]; required: string[]; just_one?: string[] }>;
  objects: Record<string, { required?: string[]; at_least_one?: string[] }>;
  object_of: Record<string, string>;
}

export const OCSF_FACTS = JSON.parse(readFileSync(join(import.meta.dirname, 'fixtures/ocsf-1.3.0.json'), 'utf8')) as Facts;

type Obj = Record<string, unknown>;
const present = (o: Obj, key: string): boolean => o[key] !== undefined && o[key] !== null && o[key] !== '';

function checkObject(kind: string, value: unknown, at: string, problems: string[]): void {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    problems.push(`${at} is not an object (${kind})`);
    return;
  }
  const o = value as Obj;
  const facts = OCSF_FACTS.objects[kind]!;
  for (const key of facts.required ?? []) if (!present(o, key)) problems.push(`${at}.${key} is required (${kind})`);
  if (facts.at_least_one && !facts.at_least_one.some((key) => present(o, key)))
    problems.push(`${at} needs at least one of ${facts.at_least_one.join(', ')} (${kind})`);
  for (const [key, inner] of Object.entries(o)) {
    const innerKind = OCSF_FACTS.object_of[key];
    if (innerKind !== undefined) checkObject(innerKind, inner, `${at}.${key}`, problems);
  }
}

export function ocsfProblems(event: Obj): string[] {
  const problems: string[] = [];
  for (const key of OCSF_FACTS.base.required) if (!present(event, key)) problems.push(`${key} is required (base event)`);
  const cls = OCSF_FACTS.classes[String(event['class_uid'])];
  if (!cls) return [...problems, `class_uid ${String(event['class_uid'])} is not one of the classes written`];
  if (event['category_uid'] !== cls.category_uid) problems.push(`category_uid of ${cls.name} is ${cls.category_uid}`);
  if (!cls.activity_id.includes(event['activity_id'] as number))
    problems.push(`activity_id ${String(event['activity_id'])} is not one of ${cls.name}'s`);
  if (event['type_uid'] !== (event['class_uid'] as number) * 100 + (event['activity_id'] as number))
    problems.push('type_uid is not class_uid * 100 + activity_id');
  if (!Number.isInteger(event['time'])) problems.push('time is not a whole number of milliseconds');
  if (!OCSF_FACTS.base.severity_id.includes(event['severity_id'] as number)) problems.push('severity_id is not an OCSF severity');
  if (event['status_id'] !== undefined && !OCSF_FACTS.base.status_id.includes(event['status_id'] as number))
    problems.push('status_id is not an OCSF status');
  for (const key of cls.required) if (!present(event, key)) problems.push(`${key} is required (${cls.name})`);
  if (cls.just_one && cls.just_one.filter((key) => present(event, key)).length !== 1)
    problems.push(`exactly one of ${cls.just_one.join(', ')} (${cls.name})`);
  for (const [key, value] of Object.entries(event)) {
    const kind = OCSF_FACTS.object_of[key];
    if (kind !== undefined) checkObject(kind, value, key, problems);
  }
  return problems;
}
