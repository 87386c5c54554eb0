// Money and times as the page's language writes them; times at a given time zone (a
// studio's), with 24-hour clocks.
import { lang } from "./web.js";

export function money(price) {
  const format = new Intl.NumberFormat(lang, { style: "currency", currency: price.currency });
  const digits = format.resolvedOptions().maximumFractionDigits;
  return format.format(price.amount / 10 ** digits);
}

export function clockAt(instant, timeZone) {
  return new Intl.DateTimeFormat(lang, {
    timeZone, hour: "2-digit", minute: "2-digit", hourCycle: "h23",
  }).format(instant);
}

export function dayAt(instant, timeZone) {
  return new Intl.DateTimeFormat(lang, {
    timeZone, weekday: "short", day: "numeric", month: "numeric", year: "numeric",
  }).format(instant);
}

// "Tue 1. 12. 2026 17:00–17:55" for a span on one day at the place.
export function spanAt(from, to, timeZone) {
  return `${dayAt(from, timeZone)} ${clockAt(from, timeZone)}–${clockAt(to, timeZone)}`;
}

export function momentAt(instant, timeZone) {
  return `${dayAt(instant, timeZone)} ${clockAt(instant, timeZone)}`;
}
