/**
 * The documentation as a reader meets it:
 * - the README is a front door: at most 250 lines, and it links every page of `docs/`;
 * - its worked example is a configuration the worker accepts as written, the same as the hosted
 *   one of `docs/providers/firecrawl.md`;
 * - its job-states table lists every state of the machine (`JOB_STATES`) once, says which are
 *   final, and how each one's Temporal run closes (`closeRun`);
 * - the generated sections of `docs/providers.md` are what the kinds' descriptors render
 *   (`npm run docs:providers` rewrites them);
 * - every relative link in `README.md` and `docs/` leads to a file that exists and, when it names
 *   one, to a heading of that file.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { FINAL_STATES, JOB_STATES, outcomeFailureType, UNSUCCESSFUL_STATES } from '../../src/model/states.js';
import { PROVIDER_DESCRIPTORS } from '../../src/providers/kinds.js';
import { PROVIDERS_PAGE_PATH, sectionOf, updateProvidersPage } from '../../tools/docs/providersPage.js';
import { firecrawlSignsWebhooks, type FirecrawlEntry } from '../../src/providers/firecrawl/index.js';

const REPO = path.resolve(import.meta.dirname, '..', '..');
const read = (rel: string) => fs.readFileSync(path.join(REPO, rel), 'utf8');
const README = read('README.md');

/**
 * Pages a link may name before they exist, because another branch writes them; once a page exists
 * its links are checked like any other.
 */
const PLANNED_PAGES = new Set<string>([]);

/** The Markdown files of `docs/`, from the repository root, sorted. */
function docsPages(dir = 'docs'): string[] {
  return fs
    .readdirSync(path.join(REPO, dir), { withFileTypes: true })
    .flatMap((e) => {
      const rel = `${dir}/${e.name}`;
      return e.isDirectory() ? docsPages(rel) : e.name.endsWith('.md') ? [rel] : [];
    })
    .sort();
}

/** `text` without its fenced code blocks (each line kept as an empty line, so line numbers hold). */
function withoutFences(text: string): string {
  let inFence = false;
  return text
    .split('\n')
    .map((line) => {
      if (/^\s*```/.test(line)) {
        inFence = !inFence;
        return '';
      }
      return inFence ? '' : line;
    })
    .join('\n');
}

/** The anchor GitHub gives a heading: lower case, punctuation dropped, each space a hyphen. */
function slugOf(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .toLowerCase()
    .trim()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of the headings of the Markdown file `rel` (a repeated heading gets `-1`, `-2`, …). */
function anchorsOf(rel: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const line of withoutFences(read(rel)).split('\n')) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = slugOf(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** The relative links of the Markdown file `rel`, with their line numbers (code and URLs left out). */
function relativeLinks(rel: string): { line: number; target: string }[] {
  const links: { line: number; target: string }[] = [];
  withoutFences(read(rel))
    .split('\n')
    .forEach((text, i) => {
      const prose = text.replace(/`[^`]*`/g, '``');
      for (const m of prose.matchAll(/\]\(([^()\s]+)(?:\s+"[^"]*")?\)/g)) {
        const target = m[1]!;
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:, …
        links.push({ line: i + 1, target });
      }
    });
  return links;
}

/** The rows of the first Markdown table after the heading `heading` of `text`, as trimmed cells. */
function tableAfter(text: string, heading: string): string[][] {
  const start = text.indexOf(`\n${heading}\n`);
  expect(start, `a section "${heading}"`).toBeGreaterThan(0);
  const lines = text.slice(start).split('\n');
  const first = lines.findIndex((l) => l.startsWith('|'));
  const rows: string[][] = [];
  for (const line of lines.slice(first + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(
      line
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map((c) => c.trim()),
    );
  }
  return rows;
}

describe('README: a front door', () => {
  it('is at most 250 lines and links every page of docs/', () => {
    expect(README.split('\n').length - 1).toBeLessThanOrEqual(250);
    const linked = new Set(relativeLinks('README.md').map((l) => path.normalize(l.target.split('#')[0]!)));
    for (const page of docsPages()) expect(linked, `README.md links ${page}`).toContain(page);
  });

  it('its worked example is the hosted Firecrawl configuration of docs/providers/firecrawl.md, valid as written', () => {
    const section = README.slice(README.indexOf("\n## A real provider's configuration\n"));
    const block = /```json\n([\s\S]*?)\n```/.exec(section);
    expect(block, 'a JSON block in "A real provider\'s configuration"').not.toBeNull();
    const config = parseConfig(JSON.parse(block![1]!), {});
    expect(Object.keys(config.providers).length).toBeGreaterThan(0);
    for (const entry of Object.values(config.providers)) {
      expect(entry).toMatchObject({ kind: 'firecrawl', baseUrl: 'https://api.firecrawl.dev' });
      expect(firecrawlSignsWebhooks(entry as FirecrawlEntry)).toBe(true);
      expect(entry.credentials?.default).toEqual({ apiKeyEnv: 'FIRECRAWL_API_KEY' });
    }
    expect(config.providers[config.defaultProvider]).toBeDefined();
    const hosted = /```json\n([\s\S]*?)\n```/.exec(read('docs/providers/firecrawl.md'))!;
    expect(config).toEqual(parseConfig(JSON.parse(hosted[1]!), {}));
  });

  it('its job-states table lists every state once, which are final, and how each run closes', () => {
    const rows = tableAfter(README, '## Job states');
    expect(rows.map((r) => r[0]).sort()).toEqual(JOB_STATES.map((s) => `\`${s}\``).sort());
    for (const [cell, , final, run] of rows) {
      const state = cell!.replace(/`/g, '') as (typeof JOB_STATES)[number];
      const isFinal = FINAL_STATES.includes(state);
      expect(final, state).toMatch(isFinal ? /^yes/ : /^no$/);
      if (!isFinal) expect(run, state).toBe('Running');
      else if ((UNSUCCESSFUL_STATES as readonly string[]).includes(state))
        expect(run, state).toContain(
          `Failed, \`${outcomeFailureType(state as (typeof UNSUCCESSFUL_STATES)[number])}\``,
        );
      else if (state === 'completed') expect(run, state).toBe('Completed');
      else expect(run, state).toBe('Canceled');
    }
  });
});

describe('docs/providers.md', () => {
  it('its generated sections are what the kinds declare (run `npm run docs:providers` after changing a descriptor)', () => {
    const page = read(PROVIDERS_PAGE_PATH);
    expect(page).toBe(updateProvidersPage(page));
    const kinds = sectionOf(page, 'kinds');
    for (const d of PROVIDER_DESCRIPTORS) {
      expect(kinds).toContain(`| \`${d.kind}\` |`);
      expect(sectionOf(page, 'contracts')).toContain(`**\`${d.kind}\`**`);
    }
  });

  it('a page without a section’s markers is refused, naming the section', () => {
    expect(() => updateProvidersPage('# Providers\n')).toThrow(/no generated section "kinds"/);
  });
});

describe('links', () => {
  it('every relative link in README.md and docs/ leads to a file that exists, and to its heading', () => {
    const broken: string[] = [];
    for (const page of ['README.md', ...docsPages()]) {
      for (const { line, target } of relativeLinks(page)) {
        const [file, anchor] = target.split('#') as [string, string | undefined];
        const rel = file ? path.normalize(path.join(path.dirname(page), decodeURI(file))) : page;
        if (!fs.existsSync(path.join(REPO, rel))) {
          if (!PLANNED_PAGES.has(rel)) broken.push(`${page}:${line}: ${target} (no file ${rel})`);
          continue;
        }
        if (anchor !== undefined && rel.endsWith('.md') && !anchorsOf(rel).has(anchor))
          broken.push(`${page}:${line}: ${target} (no heading #${anchor} in ${rel})`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('the anchors are GitHub’s', () => {
    expect(slugOf("A real provider's configuration")).toBe('a-real-providers-configuration');
    expect(slugOf('The one way (`test/material/`)')).toBe('the-one-way-testmaterial');
    expect(slugOf('`cancel-batch`')).toBe('cancel-batch');
    expect(slugOf('Failed reads on a budget: what a failing job asks (issue 34)')).toBe(
      'failed-reads-on-a-budget-what-a-failing-job-asks-issue-34',
    );
  });
});
