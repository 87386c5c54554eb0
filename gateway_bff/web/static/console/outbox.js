// The outbox of one service or of all, by state; a failed row can be replayed (with its
// confirmation and reason) and is read again until it went out.
import { api, fields, fill, guarded, row, stateWord, when } from "./console.js";
import { replayControl } from "./replay.js";

const form = document.querySelector("[data-filter]");

function outboxRow(r) {
  const action = r.state === "failed" ? replayControl(r.service, r.effect_id, () => load()) : "";
  const made = row([
    r.service, r.event_type, r.key, stateWord(r.state), String(r.attempts),
    String(r.dispatch_generation), r.last_error, when(r.created_at), action,
  ]);
  made.dataset.effect = r.effect_id;
  made.dataset.state = r.state;
  return made;
}

async function load() {
  const chosen = fields(form);
  const query = new URLSearchParams({ limit: "100" });
  for (const name of ["service", "state"]) if (chosen[name]) query.set(name, chosen[name]);
  const { rows } = await api(`/v1/ops/outbox?${query}`);
  fill(document.querySelector("[data-rows]"), rows.map(outboxRow), document.querySelector("[data-empty]"));
}

const asked = new URLSearchParams(location.search);
for (const name of ["service", "state"]) {
  const value = asked.get(name) || "";
  if ([...form[name].options].some((o) => o.value === value)) form[name].value = value;
}
form.addEventListener("submit", (event) => {
  event.preventDefault();
  const chosen = Object.entries(fields(form)).filter(([, v]) => v);
  history.replaceState(null, "", `?${new URLSearchParams(chosen)}`);
  guarded(load);
});
guarded(load);
