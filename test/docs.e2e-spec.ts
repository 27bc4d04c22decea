import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';

const ROOT = process.cwd();
const DOCUMENTS = ['README.md', ...readdirSync(join(ROOT, 'docs')).map((name) => join('docs', name))].filter((path) =>
  path.endsWith('.md'),
);

/** The anchors of a Markdown file's headings, as GitHub makes them. */
function anchors(path: string): Set<string> {
  const text = readFileSync(join(ROOT, path), 'utf8').replace(/^```[\s\S]*?^```/gm, '');
  const slugs = new Set<string>();
  const seen = new Map<string, number>();
  for (const [, heading] of text.matchAll(/^#{1,6}\s+(.+?)\s*$/gm)) {
    const slug = heading
      .toLowerCase()
      .replace(/`/g, '')
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    slugs.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return slugs;
}

/**
 * The README and docs/ link only inside the repository, and every link arrives: the file is
 * there and, for `#anchor`, a heading of that name is in it.
 */
describe('the documentation', () => {
  it.each(DOCUMENTS)('%s: every link stays in the repository and arrives', (document) => {
    const text = readFileSync(join(ROOT, document), 'utf8').replace(/^```[\s\S]*?^```/gm, '');
    const broken: string[] = [];
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/i.test(target)) {
        broken.push(`${target}: leaves the repository`);
        continue;
      }
      const [file, anchor] = target.split('#');
      const path = file === '' ? document : normalize(join(dirname(document), file));
      if (!existsSync(join(ROOT, path))) broken.push(`${target}: no such file`);
      else if (anchor !== undefined && path.endsWith('.md') && !anchors(path).has(anchor))
        broken.push(`${target}: no such heading`);
    }
    expect(broken).toEqual([]);
  });
});
