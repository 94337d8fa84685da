/**
 * Durations as people type them on the command line: a number with a unit (`500ms`, `30s`, `5m`,
 * `2h`, `1d`), or a bare number meaning seconds (`90` = 90 s). Used by the CLI's `--deadline` and
 * `--poll-*` flags; the HTTP API and the client take milliseconds.
 */

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * Parses `text` into milliseconds (rounded to a whole ms). Throws a `RangeError` whose message
 * says what is accepted when `text` is not a duration.
 */
export function parseDuration(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/i.exec(text);
  if (!m)
    throw new RangeError(
      `"${text}" is not a duration: use a number with a unit (500ms, 30s, 5m, 2h, 1d) or a number of seconds`,
    );
  return Math.round(Number(m[1]) * UNIT_MS[(m[2] ?? 's').toLowerCase()]!);
}

/** Formats milliseconds with the largest unit that divides them: `1800000` → `30m`, `1500` → `1500ms`. */
export function formatDuration(ms: number): string {
  for (const unit of ['d', 'h', 'm', 's'] as const) {
    if (ms >= UNIT_MS[unit]! && ms % UNIT_MS[unit]! === 0) return `${ms / UNIT_MS[unit]!}${unit}`;
  }
  return `${ms}ms`;
}
