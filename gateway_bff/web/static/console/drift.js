// Drift findings in words (what is wrong, who holds the truth, the repair), each service's
// outbox backlog and every consumer group's lag.
import { ApiProblem, api, element, facts, fill, guarded, row, say, stateWord, texts, when } from "./console.js";

function finding(f) {
  const card = element("article", "", "card");
  card.append(element("h3", `${f.kind} · ${f.service}`));
  card.append(facts([
    [texts.problem, f.problem],
    [texts.truth, f.truth],
    [texts.repair, f.repair],
    [texts.needs_decision, f.needs_human ? "✔" : "–"],
    [texts.state, stateWord(f.state)],
    [texts.subject, f.subject_id],
    [texts.at, when(f.found_at)],
  ]));
  return card;
}

async function loadLag() {
  try {
    const lag = await api("/v1/ops/lag");
    const backlog = lag.backlog.map((b) => row([
      b.service, String(b.pending), String(b.dispatched), String(b.failed), when(b.oldest_pending_at),
    ]));
    fill(document.querySelector("[data-backlog]"), backlog);
    fill(document.querySelector("[data-lag]"), lag.groups.map((g) => row([g.group, String(g.lag)])));
  } catch (error) {
    if (error instanceof ApiProblem && error.status === 503) say("[data-lag-status]", texts.broker_down);
    else throw error;
  }
}

async function load() {
  const { findings } = await api("/v1/ops/drift");
  document.querySelector("[data-findings]").replaceChildren(...findings.slice(0, 100).map(finding));
  document.querySelector("[data-empty]").hidden = findings.length > 0;
  await loadLag();
}

guarded(load);
