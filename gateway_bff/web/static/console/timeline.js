// A booking across the four services (GET /v1/ops/bookings/{id}/timeline): each service's
// state, its pending and failed effects and open incidents; what is safe to replay (with
// the replay control) and what needs a decision; its trace as a waterfall (the gateway reads
// Jaeger for the page) and the audit entries of the booking and of its effects.
import { showAudit } from "./audit.js";
import {
  ApiProblem, SERVICES, api, consoleUrl, element, facts, fill, guarded, say, stateWord, texts,
} from "./console.js";
import { replayControl } from "./replay.js";
import { waterfallRows } from "./waterfall.js";

const bookingId = document.querySelector("[data-booking]").dataset.booking;
const replayed = new Set(); // effects replayed here: their audit entries stay in view

function effectList(title, effects) {
  const part = element("div");
  part.append(element("h4", title));
  if (!effects.length) {
    part.append(element("p", texts.none));
    return part;
  }
  const list = element("ul", "", "plain");
  for (const e of effects) {
    const said = `${e.name} · ${e.source} · ${stateWord(e.state)} · ${texts.attempts}: ${e.attempts}`;
    list.append(element("li", e.last_error ? `${said} · ${e.last_error}` : said));
  }
  part.append(list);
  return part;
}

function serviceCard(name, side, unavailable) {
  const card = element("article", "", "card");
  card.dataset.service = name;
  card.append(element("h3", name));
  if (unavailable) {
    card.append(element("p", texts.not_answering));
    return card;
  }
  if (!side || !side.known) {
    card.append(element("p", texts.unknown_to_service));
    return card;
  }
  card.append(facts([[texts.service_state, side.state], ...Object.entries(side.facts || {})]));
  card.append(effectList(texts.pending_effects, side.pending_effects || []));
  card.append(effectList(texts.failed_effects, side.failed_effects || []));
  return card;
}

// A list of items, or one line saying there is none.
function listOr(where, items, nothing, build) {
  const list = document.querySelector(where);
  list.replaceChildren(...(items.length ? items.map(build) : [element("li", nothing)]));
}

function retryItem(effect) {
  const item = element("li");
  item.dataset.effect = effect.effect_id;
  item.append(element("p", `${effect.service} · ${effect.name} · ${effect.effect_id}`));
  item.append(replayControl(effect.service, effect.effect_id, () => {
    replayed.add(effect.effect_id);
    loadAudit(lastTold);
  }));
  return item;
}

function decisionItem(need) {
  const item = element("li");
  item.append(element("p", `${need.service} · ${need.kind} · ${need.detail || ""}`));
  const link = element("a", texts.decide_in_incidents);
  link.href = `${consoleUrl}/incidents`;
  item.append(link);
  return item;
}

function summary(told) {
  if (told.settled) return texts.settled;
  const waiting = told.waiting_on.length ? ` ${texts.waiting_on}: ${told.waiting_on.join(", ")}.` : "";
  return `${texts.not_settled}${waiting}`;
}

async function loadTrace(told) {
  if (!told.trace_id) {
    say("[data-trace-status]", texts.no_trace);
    return;
  }
  say("[data-trace-id]", `${told.trace_id}${told.one_trace ? "" : ` (${texts.not_one_trace})`}`);
  try {
    const trace = await api(`/v1/ops/traces/${encodeURIComponent(told.trace_id)}`);
    fill(document.querySelector("[data-waterfall]"), waterfallRows(trace.spans));
    say("[data-trace-status]", "");
  } catch (error) {
    say("[data-trace-status]", error instanceof ApiProblem ? error.message : texts.no_trace);
  }
}

// The booking's own entries, and those of every effect and incident it has had here.
function subjects(told) {
  const found = new Set([bookingId, ...replayed]);
  for (const side of Object.values(told.services)) {
    for (const e of [...(side.pending_effects || []), ...(side.failed_effects || [])]) found.add(e.effect_id);
    for (const i of side.open_incidents || []) found.add(i.incident_id);
  }
  return [...found].slice(0, 20);
}

let lastTold = null;
async function loadAudit(told) {
  const answers = await Promise.all(subjects(told).map((subject) =>
    api(`/v1/ops/audit?${new URLSearchParams({ subject, limit: "50" })}`)));
  const entries = answers.flatMap((a) => a.entries);
  entries.sort((a, b) => String(b.at).localeCompare(String(a.at)));
  showAudit(entries);
}

async function load() {
  const told = await api(`/v1/ops/bookings/${encodeURIComponent(bookingId)}/timeline`);
  lastTold = told;
  say("[data-summary]", summary(told));
  document.querySelector("[data-services]").replaceChildren(
    ...SERVICES.map((name) => serviceCard(name, told.services[name], told.unavailable.includes(name))),
  );
  listOr("[data-retry-safe]", told.retry_safe, texts.nothing_to_retry, retryItem);
  listOr("[data-needs-human]", told.needs_human, texts.nothing_to_decide, decisionItem);
  await Promise.all([loadTrace(told), loadAudit(told)]);
}

guarded(load);
