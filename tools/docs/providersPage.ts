/**
 * The generated sections of the providers page, `docs/providers.md`, built from the kinds'
 * declarations ({@link PROVIDER_DESCRIPTORS}, each kind's descriptor in `<kind>/index.ts`):
 *
 * - `kinds`: one row per kind: its title, its capabilities (idempotency key, job lookup, cancel,
 *   webhooks), its poll defaults, how the provider expires a known task, and its `404` grace;
 * - `contracts`: per kind, the published contract it follows and the source of its `404` grace;
 * - `evidence`: what a lost submit is decided from ({@link evidenceTable}).
 *
 * Each section sits between two marker comments (`<!-- generated: <name> … -->` and
 * `<!-- end: <name> -->`); the rest of the page is written by hand. `npm run docs:providers`
 * rewrites the sections; `test/unit/docs.test.ts` fails when the page differs from what this renders.
 *
 *   tsx tools/docs/providersPage.ts            rewrites the generated sections of docs/providers.md
 *   tsx tools/docs/providersPage.ts --check    exit 1 when they are not what would be written
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AnyProviderDescriptor } from '../../src/providers/descriptor.js';
import { evidenceTable, PROVIDER_DESCRIPTORS } from '../../src/providers/kinds.js';

/** Where the page lives, from the repository root. */
export const PROVIDERS_PAGE_PATH = 'docs/providers.md';

/** The names of the generated sections, in page order. */
export const PROVIDERS_PAGE_SECTIONS = ['kinds', 'contracts', 'evidence'] as const;
/** A generated section's name. */
export type ProvidersPageSection = (typeof PROVIDERS_PAGE_SECTIONS)[number];

/** `text` as Markdown prose: a `<` outside code spans is written `&lt;` (else it would open an HTML tag). */
function prose(text: string): string {
  return text
    .split('`')
    .map((part, i) => (i % 2 === 0 ? part.replace(/</g, '&lt;') : part))
    .join('`');
}

/** `text` safe inside a Markdown table cell. */
function cell(text: string): string {
  return prose(text).replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

/** Milliseconds as the page writes them: `30 s`, `2 min`, `6 h`, `2 days`. */
export function formatMs(ms: number): string {
  if (ms >= 2 * 86_400_000 && ms % 86_400_000 === 0) return `${ms / 86_400_000} days`;
  if (ms >= 3_600_000 && ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms >= 60_000 && ms % 60_000 === 0) return `${ms / 60_000} min`;
  return `${ms / 1000} s`;
}

/** A kind's poll defaults (`descriptor.poll`) as one cell; durations formatted, other values as they are. */
function pollCell(d: AnyProviderDescriptor): string {
  const entries = Object.entries(d.poll ?? {});
  if (entries.length === 0) return 'the global defaults';
  return entries
    .map(([k, v]) => `\`${k}\` ${k.endsWith('Ms') && typeof v === 'number' ? formatMs(v) : String(v)}`)
    .join(', ');
}

const yes = (b: boolean): string => (b ? 'yes' : '—');

/** The `kinds` section: one row per kind. */
export function kindsTable(descriptors: readonly AnyProviderDescriptor[] = PROVIDER_DESCRIPTORS): string {
  const rows = descriptors.map((d) =>
    [
      `\`${d.kind}\``,
      cell(d.title),
      yes(d.capabilities.idempotency),
      yes(d.capabilities.list),
      yes(d.capabilities.cancel),
      yes(d.capabilities.webhooks),
      pollCell(d),
      cell(d.expiry),
      formatMs(d.notFoundGrace.ms),
    ].join(' | '),
  );
  return [
    '| kind | what it drives | idempotency key | job lookup | cancel | webhooks | poll defaults | expiry of a known task | `404` grace |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows.map((r) => `| ${r} |`),
  ].join('\n');
}

/** The `contracts` section: per kind, its contract and the source of its `404` grace. */
export function contractsList(descriptors: readonly AnyProviderDescriptor[] = PROVIDER_DESCRIPTORS): string {
  return descriptors
    .map(
      (d) =>
        `- **\`${d.kind}\`**, ${prose(d.title)}. Contract: ${prose(d.contract)}. A \`404\` within ${formatMs(d.notFoundGrace.ms)} of the task's creation is "not visible yet": ${prose(d.notFoundGrace.source)}.`,
    )
    .join('\n');
}

/** The text of the generated section `name`. */
export function renderSection(name: ProvidersPageSection): string {
  switch (name) {
    case 'kinds':
      return kindsTable();
    case 'contracts':
      return contractsList();
    case 'evidence':
      return evidenceTable();
  }
}

/** The opening marker of section `name` (what follows `<!-- generated: <name>` is free text), with its line end. */
const openMarker = (name: string) => new RegExp(`<!-- generated: ${name}\\b[^\\n]*-->\\n`);
/** The closing marker of section `name`, on a line of its own. */
const closeMarker = (name: string) => `<!-- end: ${name} -->`;

/** Where the text of section `name` starts and ends in `page` (the end is the closing marker's line). */
function bounds(page: string, name: ProvidersPageSection): { start: number; end: number } {
  const open = openMarker(name).exec(page);
  const start = open ? open.index + open[0].length : -1;
  const end = open ? page.indexOf(closeMarker(name), start) : -1;
  if (!open || end < 0)
    throw new Error(
      `${PROVIDERS_PAGE_PATH} has no generated section "${name}" (<!-- generated: ${name} … --> … <!-- end: ${name} -->)`,
    );
  return { start, end };
}

/**
 * The text between the markers of section `name` in `page`, without its last line end.
 * @throws Error when the page lacks either marker of the section.
 */
export function sectionOf(page: string, name: ProvidersPageSection): string {
  const { start, end } = bounds(page, name);
  return page.slice(start, end).replace(/\n$/, '');
}

/**
 * `page` with every generated section replaced by what the descriptors render; the text around
 * the markers is kept as it is.
 * @throws Error when a section's markers are missing.
 */
export function updateProvidersPage(page: string): string {
  let out = page;
  for (const name of PROVIDERS_PAGE_SECTIONS) {
    const { start, end } = bounds(out, name);
    out = `${out.slice(0, start)}${renderSection(name)}\n${out.slice(end)}`;
  }
  return out;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === fs.realpathSync(process.argv[1])) {
  const file = path.resolve(fileURLToPath(new URL('../..', import.meta.url)), PROVIDERS_PAGE_PATH);
  const page = fs.readFileSync(file, 'utf8');
  const next = updateProvidersPage(page);
  if (process.argv.includes('--check')) {
    const same = next === page;
    console.error(
      same ? `${PROVIDERS_PAGE_PATH} is current` : `${PROVIDERS_PAGE_PATH} differs: run npm run docs:providers`,
    );
    process.exit(same ? 0 : 1);
  }
  fs.writeFileSync(file, next);
  console.error(`wrote the generated sections of ${PROVIDERS_PAGE_PATH}`);
}
