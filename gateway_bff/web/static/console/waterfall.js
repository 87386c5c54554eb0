// A trace drawn as a waterfall: one table row per span, earliest first, the span's name
// indented under its parent, its start and duration in words and a bar placed by CSS
// percentages (set through the style object: the pages' policy forbids inline styles).
import { element, row, texts } from "./console.js";

const MAX_DEPTH = 12;

function depths(spans) {
  const parents = new Map(spans.map((s) => [s.span_id, s.parent_id]));
  return new Map(spans.map((span) => {
    let depth = 0;
    let parent = span.parent_id;
    while (parent && parents.has(parent) && depth < MAX_DEPTH) {
      depth += 1;
      parent = parents.get(parent);
    }
    return [span.span_id, depth];
  }));
}

function ms(us) {
  return `${(us / 1000).toFixed(1)} ${texts.ms}`;
}

function bar(span, start, total) {
  const track = element("div", "", "track");
  track.setAttribute("aria-hidden", "true");
  const filled = element("div", "", span.error ? "bar bar-error" : "bar");
  filled.style.left = `${((span.start_us - start) / total) * 100}%`;
  filled.style.width = `${Math.max((span.duration_us / total) * 100, 0.5)}%`;
  track.append(filled);
  return track;
}

export function waterfallRows(spans) {
  if (!spans.length) return [];
  const start = Math.min(...spans.map((s) => s.start_us));
  const end = Math.max(...spans.map((s) => s.start_us + s.duration_us));
  const total = Math.max(end - start, 1);
  const depth = depths(spans);
  return spans.map((span) => {
    const name = element("span", span.name, "span-name");
    name.style.paddingInlineStart = `${depth.get(span.span_id) * 0.75}rem`;
    const made = row([
      span.service,
      name,
      ms(span.start_us - start),
      ms(span.duration_us),
      span.error ? texts.span_error : texts.span_ok,
      bar(span, start, total),
    ]);
    made.dataset.service = span.service;
    if (span.error) made.classList.add("failed");
    return made;
  });
}
