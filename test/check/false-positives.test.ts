/**
 * `skill-mcp check` on real collections (docs/architecture.md §9): findings a reviewer called false
 * when check ran over anthropics/skills (17 skills), K-Dense-AI/claude-scientific-skills (134) and
 * ComposioHQ/awesome-claude-skills (832). Each fixture is written by us in the shape seen there
 * (none of their files is copied), and must give no finding of its rule; beside each, the true
 * finding of the same shape, which must still be found.
 */
import { describe, expect, it } from 'vitest';
import { findCredentials } from '../../cli/check/credentials.js';
import { findDeadLinks } from '../../cli/check/links.js';

interface Fixture {
  /** What it is, and where the shape was seen. */
  what: string;
  text: string;
}

/** Not credentials: each gave a credential/* finding before. */
const NOT_CREDENTIALS: Fixture[] = [
  {
    what: 'an OAuth endpoint URL assigned to a token-named key (anthropics/skills, claude-api: 4 warnings)',
    text: 'config := oauth.Config{\n\tTokenEndpoint: "https://chat.acme.io/api/oauth.v3.access",\n}\n',
  },
  {
    what: 'the same in Ruby and PHP style (anthropics/skills, claude-api)',
    text: "token_endpoint: 'https://chat.acme.io/api/oauth.v3.access',\n'token_endpoint' => 'https://api.wiki.acme.io/v2/oauth/token',\n\"token_endpoint\": \"https://api.docs2.acme.io/v1/oauth/token\"\n",
  },
  {
    what: 'a private key placeholder in a .env sample (the usual `\\n...\\n` between the lines)',
    text: 'GOOGLE_PRIVATE_KEY="-----BEGIN PRIVATE KEY-----\\n...\\n-----END PRIVATE KEY-----\\n"\n',
  },
  {
    what: 'a private key placeholder inside service-account JSON in a doc',
    text: '{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\\nYOUR_PRIVATE_KEY_HERE\\n-----END PRIVATE KEY-----\\n"}\n',
  },
  {
    what: 'a private key header with a truncated, unusable start (MIIE...) and no end',
    text: 'FIREBASE_PRIVATE_KEY=-----BEGIN PRIVATE KEY-----MIIEvQ...\n',
  },
  {
    what: 'a LaTeX signature line next to the word Credentials (K-Dense, treatment-plans: 5 warnings)',
    text: 'Name/Credentials: \\rule{6cm}{0.5pt}\\\\[1em]\nCredentials: \\rule{5.5cm}{0.4pt}\\\\\n',
  },
  {
    what: 'a call whose name mentions a token (K-Dense, transformers)',
    text: 'token = tokenizer.convert_ids_to_tokens(100)\n',
  },
  {
    what: 'placeholder keys in shell examples (K-Dense, perplexity-search: 2 warnings)',
    text: "export OPENROUTER_API_KEY='sk-or-v1-project1-key'\nexport OPENROUTER_API_KEY='sk-or-v1-project2-key'\napi_key = \"your-api-key-2024-x9\"\n",
  },
];

/** Still credentials, of the same shapes. */
const CREDENTIALS: Fixture[] = [
  {
    what: 'a real-looking key block, its lines escaped in a .env string',
    text: `KEY="-----BEGIN PRIVATE KEY-----\\n${'MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7'.repeat(2)}\\n${'q9Zx'.repeat(16)}\\n-----END PRIVATE KEY-----\\n"\n`,
  },
  {
    what: 'a key block as a PEM file',
    text: `-----BEGIN EC PRIVATE KEY-----\n${'MHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5ohd2c7Bbb3UAoAoGCCqGSM49'}\n${'AwEHoUQDQgAE'}\n-----END EC PRIVATE KEY-----\n`,
  },
  {
    what: 'a URL that carries a random password',
    text: 'token_url = "https://deploy:Q7mZ2xK9pL4vN8wR3tY6@registry.example.com/v2/"\n',
  },
  {
    what: 'a random token assigned to a token-named key',
    text: 'access_token: "q8Z2xK7mP4vN9wR3tL6yB1cD5fH0jS8x"\n',
  },
];

describe('false positives seen on real collections are gone, their true neighbours are still found', () => {
  it.each(NOT_CREDENTIALS.map((f) => [f.what, f.text]))('not a credential: %s', (_what, text) => {
    expect(findCredentials(text)).toEqual([]);
  });

  it.each(CREDENTIALS.map((f) => [f.what, f.text]))('still a credential: %s', (_what, text) => {
    const hits = findCredentials(text);
    expect(hits).toHaveLength(1);
    // Never the secret: a URL's password is not shown at all.
    expect(hits[0]!.message).not.toContain('Q7mZ2xK9');
  });

  it('a footnote definition is not a link (K-Dense, markdown-mermaid-writing: 2 errors), a dead reference definition still is', () => {
    const text = [
      '# Diagrams',
      '',
      'Mermaid renders on GitHub.[^1] See the docs.[^2]',
      '',
      '[^1]: GitHub Blog. "Include diagrams in your Markdown files." https://github.blog/',
      '[^2]: Mermaid. "Diagramming and charting tool." https://mermaid.js.org/',
      '[guide]: reference/guide.md',
      '',
    ].join('\n');
    const hits = findDeadLinks(text, 0, ['SKILL.md', 'references/guide.md'], () => false);
    expect(hits.map((h) => h.message)).toEqual(['the link to "reference/guide.md" is dead: no such file exists in the skill']);
  });
});
