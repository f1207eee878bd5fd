// Reading the project's Markdown as GitHub renders it: the documentation files, their code blocks,
// their links and the anchors their headings get. Shared by the documentation tests.
import fs from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from '../support/harness.ts';

/** Every Markdown file a reader is pointed at: the README, docs/ and the client's README. */
export function documentationFiles(): string[] {
  const docs = fs
    .readdirSync(path.join(PROJECT_ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`);
  return ['README.md', ...docs, 'clients/typescript/README.md'];
}

export function readDoc(file: string): string {
  return fs.readFileSync(path.join(PROJECT_ROOT, file), 'utf8');
}

export interface CodeBlock {
  lang: string;
  /** 1-based line of the opening fence. */
  line: number;
  text: string;
}

/** Fenced code blocks (```lang ... ```), in order. */
export function codeBlocks(markdown: string): CodeBlock[] {
  const blocks: CodeBlock[] = [];
  let open: { lang: string; line: number; lines: string[] } | null = null;
  markdown.split('\n').forEach((line, i) => {
    if (line.startsWith('```')) {
      if (open) {
        blocks.push({ lang: open.lang, line: open.line, text: open.lines.join('\n') });
        open = null;
      } else {
        open = { lang: line.slice(3).trim(), line: i + 1, lines: [] };
      }
    } else if (open) {
      open.lines.push(line);
    }
  });
  return blocks;
}

/** The text outside fenced code blocks (fenced lines blanked, so line numbers hold). */
export function prose(markdown: string): string {
  let inFence = false;
  return markdown
    .split('\n')
    .map((line) => {
      if (line.startsWith('```')) {
        inFence = !inFence;
        return '';
      }
      return inFence ? '' : line;
    })
    .join('\n');
}

/** Inline code spans blanked (their text is not Markdown), keeping the rest in place. */
function withoutCodeSpans(text: string): string {
  return text.replace(/``[^\n]*?``|`[^`\n]*`/g, (m) => ' '.repeat(m.length));
}

export interface Link {
  target: string;
  line: number;
}

/** Inline links and images `[text](target)` in the prose. */
export function links(markdown: string): Link[] {
  const out: Link[] = [];
  withoutCodeSpans(prose(markdown))
    .split('\n')
    .forEach((line, i) => {
      for (const m of line.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) out.push({ target: m[1]!, line: i + 1 });
    });
  return out;
}

/**
 * The anchors GitHub gives a file's headings: the heading's text as rendered (code spans and
 * links reduced to their text), lower-cased, punctuation dropped, spaces as hyphens; a repeated
 * anchor gets -1, -2, ...
 */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of prose(markdown).split('\n')) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const text = m[1]!.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/`/g, '');
    const base = text
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}
