/**
 * @module The lines the front and the runner write to stderr: plain text (the default, for a person
 * at a terminal) or one JSON object per line (`SKILL_MCP_LOG_FORMAT=json`, for a log collector):
 * `{"time","level","component","msg", ...fields}`. Fields are chosen by the caller from known
 * values; no caller passes a token, a secret or a request body.
 *
 * `SKILL_MCP_LOG_LEVEL=debug` adds the internal notes (how the folders are watched, how a run's
 * limits are set, the standalone runner's own start) that a person starting the server does not
 * need; by default (`info`) stderr says what is served and that it is ready, and every warning and
 * error (docs/configuration.md, "What stderr says").
 */
import { z } from 'zod';
import { readVariable, type SettingIssue, type VariableSpec } from './settings-schema.js';

export type LogFormat = 'text' | 'json';

export const LOG_FORMAT: VariableSpec<LogFormat> = {
  name: 'SKILL_MCP_LOG_FORMAT',
  schema: z.enum(['text', 'json']),
  expected: 'text or json',
  fallback: 'text',
  policy: 'stop',
};

export type LogLevel = 'info' | 'debug';

export const LOG_LEVEL: VariableSpec<LogLevel> = {
  name: 'SKILL_MCP_LOG_LEVEL',
  schema: z.enum(['info', 'debug']),
  expected: 'info or debug',
  fallback: 'info',
  policy: 'default',
};

export function readLogLevel(env: Readonly<Record<string, string | undefined>>, issues: SettingIssue[] = []): LogLevel {
  return readVariable(env, LOG_LEVEL, issues);
}

export function readLogFormat(env: Readonly<Record<string, string | undefined>>, issues: SettingIssue[] = []): LogFormat {
  return readVariable(env, LOG_FORMAT, issues);
}

export interface LineWriter {
  readonly format: LogFormat;
  /** A message (text: `<prefix>: message`; json: `msg` with a level read from its first word). */
  say(message: string, fields?: Record<string, unknown>): void;
  /** A structured record (JSON only; text mode writes nothing): the access log. */
  event(msg: string, fields: Record<string, unknown>): void;
  /** An internal note: written only at `SKILL_MCP_LOG_LEVEL=debug` (text: `<prefix>: debug: message`). */
  debug(message: string): void;
}

/** The internal-note channel of a process reading `env` (a no-op unless SKILL_MCP_LOG_LEVEL=debug). */
export function debugLine(
  env: Readonly<Record<string, string | undefined>>,
  component: string,
  textPrefix: string,
): (message: string) => void {
  const writer = lineWriter(component, textPrefix, readLogFormat(env), undefined, readLogLevel(env));
  return (message) => writer.debug(message);
}

function levelOf(message: string): 'warn' | 'info' {
  return /^(warning|not ready|http: |error)/i.test(message) ? 'warn' : 'info';
}

export function lineWriter(
  component: string,
  textPrefix: string,
  format: LogFormat,
  write: (line: string) => void = (line) => void process.stderr.write(line),
  level: LogLevel = 'info',
): LineWriter {
  const json = (level: string, msg: string, fields: Record<string, unknown>): void =>
    write(`${JSON.stringify({ time: new Date().toISOString(), level, component, msg, ...fields })}\n`);
  return {
    format,
    say(message, fields = {}) {
      if (format === 'json') json(levelOf(message), message, fields);
      else write(`${textPrefix}: ${message}\n`);
    },
    event(msg, fields) {
      if (format === 'json') json('info', msg, fields);
    },
    debug(message) {
      if (level !== 'debug') return;
      if (format === 'json') json('debug', message, {});
      else write(`${textPrefix}: debug: ${message}\n`);
    },
  };
}
