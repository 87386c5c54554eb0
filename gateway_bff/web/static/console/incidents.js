// Incidents that need a human, each with the decision form (POST .../resolve {decision,
// note}); a resolved one shows who decided what.
import { acting, api, element, facts, fields, guarded, post, say, stateWord, texts, when } from "./console.js";

const filter = document.querySelector("[data-filter]");
let made = 0;

function labelled(tag, label, name) {
  made += 1;
  const id = `${name}-${made}`;
  const caption = element("label", label);
  caption.htmlFor = id;
  const field = element(tag);
  Object.assign(field, { id, name });
  return [caption, field];
}

function decisionForm(incident) {
  const form = element("form", "", "stacked");
  const [decisionLabel, decision] = labelled("input", texts.decision, "decision");
  Object.assign(decision, { required: true, maxLength: 200 });
  decision.setAttribute("list", "decisions");
  const [noteLabel, note] = labelled("textarea", texts.note, "note");
  Object.assign(note, { maxLength: 2000, rows: 2 });
  const send = element("button", texts.resolve);
  send.type = "submit";
  form.append(decisionLabel, decision, noteLabel, note, send);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    send.disabled = true;
    const path = `/v1/ops/incidents/${encodeURIComponent(incident.incident_id)}/resolve`;
    const done = await acting(() => post(path, { decision: decision.value.trim(), note: note.value }));
    send.disabled = false;
    if (done) {
      say("[data-done]", texts.resolved_now);
      guarded(load);
    }
  });
  return form;
}

function card(incident) {
  const made = element("article", "", "card");
  made.dataset.incident = incident.incident_id;
  made.append(element("h2", `${incident.kind} · ${incident.service}`));
  const shown = [
    [texts.state, stateWord(incident.state)],
    [texts.subject, incident.subject_id],
    [texts.opened, when(incident.opened_at)],
    [texts.detail, incident.detail],
  ];
  if (incident.state === "resolved") {
    shown.push([texts.resolved_by, incident.resolved_by], [texts.decision, incident.decision],
      [texts.note, incident.note]);
  }
  made.append(facts(shown));
  if (incident.state === "open") made.append(decisionForm(incident));
  return made;
}

async function load() {
  const { state } = fields(filter);
  const query = state ? `?${new URLSearchParams({ state })}` : "";
  const { incidents } = await api(`/v1/ops/incidents${query}`);
  document.querySelector("[data-incidents]").replaceChildren(...incidents.slice(0, 100).map(card));
  document.querySelector("[data-empty]").hidden = incidents.length > 0;
}

filter.addEventListener("submit", (event) => {
  event.preventDefault();
  guarded(load);
});
guarded(load);
