// Every relative link in the README, docs/ and the client's README leads somewhere: the file
// exists, and a `#anchor` names a heading of the file it points into (as GitHub makes anchors).
// The reference moved from the README into docs/; this keeps the cross-links honest.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../support/harness.ts';
import { documentationFiles, headingAnchors, links, readDoc } from './markdown.ts';

describe('documentation links', () => {
  it('finds the anchors GitHub makes', () => {
    const anchors = headingAnchors(
      ['# Market Data', '## Search: `POST /svc/data/search` (1 credit)', '### pf_01\'s two data arms', '## Ping', '## Ping', '```', '# not a heading', '```'].join('\n'),
    );
    expect([...anchors]).toEqual(['market-data', 'search-post-svcdatasearch-1-credit', 'pf_01s-two-data-arms', 'ping', 'ping-1']);
  });

  for (const file of documentationFiles()) {
    it(`${file}: every relative link resolves`, () => {
      const broken: string[] = [];
      for (const { target, line } of links(readDoc(file))) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
        const [rawPath, anchor] = target.split('#', 2) as [string, string | undefined];
        const linked = rawPath === '' ? file : path.posix.normalize(path.posix.join(path.posix.dirname(file), decodeURI(rawPath)));
        const where = `${file}:${line} → ${target}`;
        if (linked.startsWith('..') || !fs.existsSync(path.join(PROJECT_ROOT, linked))) {
          broken.push(`${where}: no file ${linked}`);
          continue;
        }
        if (anchor === undefined) continue;
        if (!linked.endsWith('.md')) {
          broken.push(`${where}: an anchor into a file that is not Markdown`);
        } else if (!headingAnchors(readDoc(linked)).has(anchor)) {
          broken.push(`${where}: no heading makes #${anchor} in ${linked}`);
        }
      }
      expect(broken).toEqual([]);
    });
  }
});
