/**
 * How long a provider asks us to wait.
 *
 * Sources: RFC 9110 §10.2.3 (`Retry-After: <delay-seconds> | <HTTP-date>`); Firecrawl's server
 * source sometimes gives the wait only in the message text ("Rate limit exceeded. Please retry
 * after 7 seconds."), so {@link parseWaitFromMessage} reads common English phrasings.
 */

/**
 * The longest wait a provider's answer is taken at, ms (one day): a longer one (a typo, a date
 * years ahead) is read as a day, so that every wait stays a time the clock and the deadline can
 * hold; a job's own deadline bounds it further.
 */
export const MAX_PROVIDER_WAIT_MS = 86_400_000;

/**
 * Parses a `Retry-After` header value into a wait in ms, at most {@link MAX_PROVIDER_WAIT_MS}.
 * Accepts delay-seconds (`"7"`, `"1.5"`) and an HTTP-date (relative to `nowMs`, epoch ms; it names
 * its month, a time of day and a year, as every HTTP-date format does). A list of delay-seconds (`"10, 10"`: the header sent
 * twice, which fetch joins with a comma) gives the longest. Returns `undefined` for absent or
 * unparsable values (`"7."`, `"-5"`, `"1 2"`, which a lenient date parser reads as days of 2001, so
 * a wait of 0); a date in the past gives 0.
 */
export function parseRetryAfter(value: string | null | undefined, nowMs: number): number | undefined {
  if (value === null || value === undefined) return undefined;
  const v = value.trim();
  if (v === '') return undefined;
  if (DELAY_SECONDS_LIST.test(v))
    return Math.min(MAX_PROVIDER_WAIT_MS, Math.round(Math.max(...v.split(',').map(Number)) * 1000));
  if (!HTTP_DATE_PARTS.every((part) => part.test(v))) return undefined;
  // A date without a zone (asctime's format has none) is UTC, not the worker's local time.
  const at = Date.parse(ZONE.test(v) ? v : `${v} GMT`);
  if (Number.isNaN(at)) return undefined;
  return Math.min(MAX_PROVIDER_WAIT_MS, Math.max(0, at - nowMs));
}

/** One or more delay-seconds, comma-separated (RFC 9110 §5.3: a header sent twice reads as a list). */
const DELAY_SECONDS_LIST = /^\d+(\.\d+)?(\s*,\s*\d+(\.\d+)?)*$/;

/**
 * What every HTTP-date format (IMF-fixdate, RFC 850, asctime) has: a month's name, a time of day
 * (`hh:mm:ss`) and a year (two digits in RFC 850). A value lacking one (`5, may`, or a date with no
 * year) is no date, though a lenient date parser reads it as one (a day in 2001, so a wait of 0).
 */
const HTTP_DATE_PARTS = [
  /\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)\b/i,
  /\b\d{2}:\d{2}:\d{2}\b/,
  // A year: four digits, or RFC 850's two after the month (`06-Nov-94 `); a day of the month is no year.
  /\b\d{4}\b|-\d{2}\s/,
];

/**
 * A time-zone designator `Date.parse` reads (`GMT`, as IMF-fixdate and RFC 850 dates say, a US
 * zone's name, or an offset). asctime dates carry none and are UTC (RFC 9110 §5.6.7), which
 * `Date.parse` would read as the process's local time.
 */
const ZONE = /\b(?:GMT|UTC?|[ECMP][SD]T)\b|[+-]\d{2}:?\d{2}$/i;

const UNIT_MS: Record<string, number> = {
  ms: 1,
  millisecond: 1,
  milliseconds: 1,
  s: 1000,
  sec: 1000,
  secs: 1000,
  second: 1000,
  seconds: 1000,
  m: 60_000,
  min: 60_000,
  mins: 60_000,
  minute: 60_000,
  minutes: 60_000,
  h: 3_600_000,
  hr: 3_600_000,
  hour: 3_600_000,
  hours: 3_600_000,
};

/**
 * Finds a wait in free text such as "retry after 7 seconds", "try again in 2 minutes",
 * "please wait 30s", "Retry-After: 5". Returns ms (at most {@link MAX_PROVIDER_WAIT_MS}), or
 * `undefined` when no wait is stated.
 */
export function parseWaitFromMessage(message: string | null | undefined): number | undefined {
  if (!message) return undefined;
  const re =
    /(?:retry|try again|wait|available)[^0-9]{0,24}?(\d+(?:\.\d+)?)\s*(milliseconds?|ms|seconds?|secs?|s|minutes?|mins?|m|hours?|hr|h)?\b/i;
  const m = re.exec(message);
  if (!m) return undefined;
  const n = Number(m[1]);
  const unit = (m[2] ?? 's').toLowerCase();
  const factor = UNIT_MS[unit] ?? 1000;
  return Math.min(MAX_PROVIDER_WAIT_MS, Math.round(n * factor));
}
