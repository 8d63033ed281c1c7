/**
 * The `secrets` key of a declaration (issue 30, docs/secrets.md "Declaring") against the ways an
 * author could send a credential further than a person reads: a secret with no host, a host the
 * declaration's egress does not cover, a name the runner or a loader reads, a name that is also a
 * plain variable (whose real value the legacy path would hand over), a header that re-routes or
 * reframes the request, and a format that injects a header of its own (CR/LF).
 */
import { describe, expect, it } from 'vitest';
import { parseDeclaration } from '../../shared/declaration.js';
import { secretFormatProblem, secretHeaderProblem } from '../../shared/declaration-secrets.js';

const RUN = [{ script: 'call.py', interpreter: 'python3' }];

function declare(secrets: unknown, extra: Record<string, unknown> = {}, labels: { keyPrefix?: string; what?: string } = {}) {
  return parseDeclaration(
    { version: 1, run: RUN, egress: ['api.example.com', '*.slack.com', '127.0.0.1:8443'], secrets, ...extra } as never,
    labels,
  );
}

/** The rejection text of a declaration that must be refused whole. */
function refused(secrets: unknown, extra: Record<string, unknown> = {}): string {
  const result = declare(secrets, extra);
  expect(result.declaration, JSON.stringify(result)).toBeUndefined();
  expect(result.problems[0]).toContain("the skill's scripts are not runnable");
  return result.problems[0]!;
}

describe('a good secrets block', () => {
  it('takes name and hosts, defaults header to Authorization and format to Bearer {value}, canonical hosts, sorted by name', () => {
    const result = declare([
      { name: 'SLACK_TOKEN', hosts: ['*.SLACK.com', 'hooks.slack.com:443'], header: 'X-Api-Key', format: 'token={value}' },
      { name: 'API_TOKEN', hosts: ['API.example.com', 'api.example.com'] },
    ]);
    expect(result.problems).toEqual([]);
    expect(result.declaration!.secrets).toEqual([
      { name: 'API_TOKEN', hosts: ['api.example.com'], header: 'Authorization', format: 'Bearer {value}' },
      { name: 'SLACK_TOKEN', hosts: ['*.slack.com', 'hooks.slack.com:443'], header: 'X-Api-Key', format: 'token={value}' },
    ]);
  });

  it('reads the same in a sidecar or operator file (fields at top level), naming keys without the mcp-host. prefix', () => {
    const result = declare([{ name: 'API_TOKEN', hosts: ['api.example.com'], heder: 'X' }], {}, { keyPrefix: '', what: 'mcp-host.yaml' });
    expect(result.declaration!.secrets).toEqual([
      { name: 'API_TOKEN', hosts: ['api.example.com'], header: 'Authorization', format: 'Bearer {value}' },
    ]);
    expect(result.problems).toEqual(['unknown keys ignored: secrets[0].heder']);
  });

  it('no secrets key (or an empty list) leaves the declaration without secrets', () => {
    expect(declare(undefined).declaration).not.toHaveProperty('secrets');
    expect(declare([]).declaration).not.toHaveProperty('secrets');
  });
});

describe('each bad shape refuses the whole declaration, naming the secret', () => {
  it.each([
    ['a mapping instead of a list', { API_TOKEN: 'api.example.com' }, 'mcp-host.secrets must be a list'],
    ['a row that is a string', ['API_TOKEN'], 'mcp-host.secrets[0] must be a mapping'],
    ['no name', [{ hosts: ['api.example.com'] }], 'mcp-host.secrets[0].name must be a variable name'],
    ['a name that is not a variable name', [{ name: 'API-TOKEN', hosts: ['api.example.com'] }], '"API-TOKEN" is not a variable name'],
    [
      'the same name twice',
      [
        { name: 'A_TOKEN', hosts: ['api.example.com'] },
        { name: 'A_TOKEN', hosts: ['api.example.com'] },
      ],
      'mcp-host.secrets[1].name A_TOKEN is declared twice',
    ],
    [
      'too many secrets',
      Array.from({ length: 17 }, (_, i) => ({ name: `T${i}`, hosts: ['api.example.com'] })),
      'lists 17 secrets; at most 16',
    ],
  ])('%s', (_name, secrets, text) => {
    expect(refused(secrets)).toContain(text);
  });
});

describe('a secret with no host, or a host outside egress, is refused', () => {
  it.each([
    ['no hosts key', [{ name: 'API_TOKEN' }], 'mcp-host.secrets[0].hosts must list the hosts API_TOKEN is sent to'],
    ['an empty hosts list', [{ name: 'API_TOKEN', hosts: [] }], 'mcp-host.secrets[0].hosts must list the hosts'],
    ['hosts as a string', [{ name: 'API_TOKEN', hosts: 'api.example.com' }], 'mcp-host.secrets[0].hosts must list the hosts'],
    ['a host that is not a string', [{ name: 'API_TOKEN', hosts: [443] }], 'mcp-host.secrets[0].hosts[0] must be a string'],
    ['a bare "*"', [{ name: 'API_TOKEN', hosts: ['*'] }], 'would allow every host'],
    ['a URL', [{ name: 'API_TOKEN', hosts: ['https://api.example.com/v1'] }], 'is a URL or a path'],
    [
      'a host the egress does not declare',
      [{ name: 'API_TOKEN', hosts: ['evil.example.org'] }],
      '"evil.example.org" is not covered by the declaration\'s egress',
    ],
    ['a port the egress does not declare', [{ name: 'API_TOKEN', hosts: ['127.0.0.1:9999'] }], '"127.0.0.1:9999" is not covered'],
    ['the domain itself under a *. egress entry', [{ name: 'API_TOKEN', hosts: ['slack.com'] }], '"slack.com" is not covered'],
    ['a wider wildcard than the egress', [{ name: 'API_TOKEN', hosts: ['*.example.com'] }], '"*.example.com" is not covered'],
  ])('%s', (_name, secrets, text) => {
    expect(refused(secrets)).toContain(text);
  });

  it('a declaration with secrets but no egress at all refuses', () => {
    expect(refused([{ name: 'API_TOKEN', hosts: ['api.example.com'] }], { egress: [] })).toContain(
      "not covered by the declaration's egress",
    );
  });
});

describe('names that must never hold a secret', () => {
  it.each([
    ["the runner's own variables", 'SKILL_MCP_SECRET_API_TOKEN', 'a variable no script may ever be given'],
    ['MCP_ variables', 'MCP_SKILL_RUN', 'a variable no script may ever be given'],
    ['a loader variable', 'LD_PRELOAD', 'a variable no script may ever be given'],
    ['a runtime variable', 'NODE_OPTIONS', 'a variable no script may ever be given'],
    ['PATH', 'PATH', 'a variable no script may ever be given'],
    ['a proxy variable the run sets', 'HTTPS_PROXY', 'set by the run itself'],
    // Never grantable since the proxy's bundle (runner/secrets/trust.ts): refused by that rule first.
    ['the CA bundle variable the run sets', 'SSL_CERT_FILE', 'a variable no script may ever be given'],
    ["requests' CA bundle", 'REQUESTS_CA_BUNDLE', 'a variable no script may ever be given'],
    ['the skill folder variable', 'SKILL_DIR', 'set by the run itself'],
  ])('%s (%s)', (_what, name, text) => {
    expect(refused([{ name, hosts: ['api.example.com'] }])).toContain(text);
  });

  it('a name that is also a plain env proposal is refused (its real value would reach the script)', () => {
    expect(refused([{ name: 'API_TOKEN', hosts: ['api.example.com'] }], { env: [{ name: 'API_TOKEN', secret: true }] })).toContain(
      'also asked for as a plain variable',
    );
  });

  it('a name a script also asks for in its env is refused', () => {
    expect(
      refused([{ name: 'API_TOKEN', hosts: ['api.example.com'] }], {
        run: [{ script: 'call.py', interpreter: 'python3', env: ['API_TOKEN'] }],
      }),
    ).toContain('also asked for as a plain variable');
  });
});

describe('headers that would re-route, reframe or reach the proxy are refused', () => {
  it.each([
    'Host',
    'host',
    'Content-Length',
    'Transfer-Encoding',
    'Connection',
    'Keep-Alive',
    'Upgrade',
    'TE',
    'Trailer',
    'Expect',
    'Proxy-Authorization',
    'proxy-connection',
    'Cookie',
    'Set-Cookie',
  ])('%s', (header) => {
    expect(secretHeaderProblem(header)).toContain('may not carry a secret');
    expect(refused([{ name: 'API_TOKEN', hosts: ['api.example.com'], header }])).toContain(
      `mcp-host.secrets[0].header "${header}" may not carry a secret`,
    );
  });

  it.each(['X Api Key', 'X-Api-Key:', 'X-Key\r\nHost: evil', '', 'a'.repeat(65), 'Ключ'])(
    'a header that is not a field name: %j',
    (header) => {
      expect(secretHeaderProblem(header)).toContain('is not a header name');
    },
  );

  it('ordinary API headers are fine', () => {
    for (const header of ['Authorization', 'X-Api-Key', 'x-goog-api-key', 'Api-Key', 'PRIVATE-TOKEN'])
      expect(secretHeaderProblem(header)).toBeUndefined();
  });
});

describe('a format that could inject a header is refused', () => {
  it.each([
    ['CRLF then a header of its own', 'Bearer {value}\r\nX-Injected: 1', 'may hold visible ASCII characters and spaces only'],
    ['a bare LF', 'Bearer {value}\nHost: evil.example', 'may hold visible ASCII characters and spaces only'],
    ['a tab', 'Bearer\t{value}', 'may hold visible ASCII characters and spaces only'],
    ['a NUL', 'Bearer {value}\0', 'may hold visible ASCII characters and spaces only'],
    ['non-ASCII', 'Bearer {value} ✓', 'may hold visible ASCII characters and spaces only'],
    ['no {value}', 'Bearer', 'must hold {value} exactly once'],
    ['{value} twice', '{value}:{value}', 'must hold {value} exactly once'],
    ['a leading space', ' Bearer {value}', 'may not start or end with a space'],
    ['empty', '', 'must be 1 to 256 characters'],
    ['too long', `Bearer {value}${'x'.repeat(300)}`, 'must be 1 to 256 characters'],
  ])('%s', (_name, format, text) => {
    expect(secretFormatProblem(format)).toContain(text);
    expect(refused([{ name: 'API_TOKEN', hosts: ['api.example.com'], format }])).toContain(`mcp-host.secrets[0].format ${text}`);
  });

  it('a format that is not a string is refused', () => {
    expect(refused([{ name: 'API_TOKEN', hosts: ['api.example.com'], format: 42 }])).toContain('format must be a string holding {value}');
  });
});
