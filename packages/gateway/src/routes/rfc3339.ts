/**
 * The instant an RFC 3339 date-time names. Shared by route validation (is expires_at a
 * valid future time?) and route status (has the route expired?), so that the two agree on
 * what a route's expiry means.
 */

// RFC 3339 §5.6 date-time: full-date "T" full-time, with a mandatory offset. The "T" and
// "Z" may be lower case (§5.6 note). `Date.parse` alone is not enough: it also accepts
// forms that are not RFC 3339 ("2026-01-01", no offset) and rolls impossible dates over
// ("2026-02-30" becomes March 2).
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;

/**
 * Milliseconds since the epoch of `text`, or undefined when it is not an RFC 3339
 * date-time with an offset, or names a day, hour, minute or offset that does not exist.
 *
 * Fractions finer than a millisecond are truncated. A leap second (`:60`) is refused: the
 * gateway's clock has none, so it could not say whether such an instant has passed.
 */
export function parseRfc3339(text: string): number | undefined {
  const match = DATE_TIME.exec(text);
  if (!match) return undefined;
  const [, year, month, day, hour, minute, second, fraction, sign, offsetHour, offsetMinute] = match;
  const y = Number(year);
  const mo = Number(month);
  const d = Number(day);
  const h = Number(hour);
  const mi = Number(minute);
  const s = Number(second);
  if (mo < 1 || mo > 12 || d < 1 || d > daysInMonth(y, mo) || h > 23 || mi > 59 || s > 59) return undefined;
  const oh = offsetHour === undefined ? 0 : Number(offsetHour);
  const om = offsetMinute === undefined ? 0 : Number(offsetMinute);
  if (oh > 23 || om > 59) return undefined;
  const ms = fraction === undefined ? 0 : Number(fraction.padEnd(3, "0").slice(0, 3));
  // setUTCFullYear, not Date.UTC: Date.UTC reads years 0-99 as 1900-1999.
  const local = new Date(0);
  local.setUTCFullYear(y, mo - 1, d);
  local.setUTCHours(h, mi, s, ms);
  // The text gives local time at the offset, so UTC is local time minus the offset.
  const offsetMs = (sign === "-" ? -1 : 1) * (oh * 60 + om) * 60_000;
  return local.getTime() - offsetMs;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}
