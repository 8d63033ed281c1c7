// The third-party notices the package ships (dist/THIRD_PARTY_NOTICES.md, and dist/sbom.cdx.json): the bundles hold other
// packages' code (MIT, ISC, Apache-2.0, BSD: each asks for its notice to travel with copies), so
// build.mjs hands this the esbuild metafiles and every package that contributed a byte gets its
// name, version, licence and licence text. A bundled package with no licence file stops the build.
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

/** node_modules/<name> or node_modules/@scope/<name> (the innermost, for nested copies). */
function packageDirOf(input) {
  const match = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input);
  return match?.[1];
}

/** The packages whose code the bundles hold: name, version, licence, licence text. */
async function bundledPackages(metafiles) {
  const dirs = new Set();
  for (const metafile of metafiles) {
    for (const input of Object.keys(metafile.inputs)) {
      const dir = packageDirOf(input);
      if (dir) dirs.add(dir);
    }
  }
  const entries = [];
  for (const dir of [...dirs].sort()) {
    const pkg = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8'));
    const names = existsSync(dir) ? await readdir(dir) : [];
    const file = names.find((name) => /^(licen[cs]e|copying)(\.|$)/i.test(name));
    if (!file) throw new Error(`build: ${pkg.name}@${pkg.version} is bundled but ships no licence file; its notice cannot be shipped`);
    entries.push({
      name: pkg.name,
      version: pkg.version,
      license: pkg.license ?? 'see text',
      text: (await readFile(join(dir, file), 'utf8')).trim(),
    });
  }
  const seen = new Map();
  for (const entry of entries) seen.set(`${entry.name}@${entry.version}`, entry);
  return [...seen.values()];
}

export async function thirdPartyNotices(metafiles) {
  const unique = await bundledPackages(metafiles);
  return [
    '# Third-party notices',
    '',
    `The files in dist/ bundle code from these ${unique.length} packages. Their licences follow.`,
    '',
    ...unique.map((e) => `- ${e.name} ${e.version} (${e.license})`),
    '',
    ...unique.flatMap((e) => [`## ${e.name} ${e.version} (${e.license})`, '', '```', e.text, '```', '']),
  ].join('\n');
}

/**
 * A CycloneDX 1.5 SBOM of the same packages (dist/sbom.cdx.json). package.json declares no run-time
 * dependency because none is installed: the bundles carry them, so the tarball installs offline and
 * anywhere. A scanner reads what is inside from this file instead.
 */
export async function bundledSbom(metafiles, self) {
  const unique = await bundledPackages(metafiles);
  const purl = (name, version) => `pkg:npm/${name.startsWith('@') ? `%40${name.slice(1)}` : name}@${version}`;
  return `${JSON.stringify(
    {
      bomFormat: 'CycloneDX',
      specVersion: '1.5',
      version: 1,
      metadata: {
        component: {
          type: 'application',
          name: self.name,
          version: self.version,
          purl: purl(self.name, self.version),
          licenses: [{ license: { id: self.license } }],
        },
      },
      components: unique.map((e) => ({
        type: 'library',
        name: e.name,
        version: e.version,
        purl: purl(e.name, e.version),
        licenses: [{ expression: e.license }],
      })),
    },
    null,
    2,
  )}\n`;
}
