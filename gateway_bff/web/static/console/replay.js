// Replaying an outbox row, as an operator decides it: a first press opens a confirmation
// with the reason (required: it goes into the audit log), the replay is sent, and the row
// is read again until the outbox says it went out under its new generation.
import { acting, api, element, post, texts } from "./console.js";

const POLL_MS = 1000;
const POLLS = 45;
let made = 0; // ids for the labels of several controls on one page

async function dispatched(service, effectId, generation) {
  const query = new URLSearchParams({ service, state: "dispatched", limit: "1000" });
  const { rows } = await api(`/v1/ops/outbox?${query}`);
  return rows.some((r) => r.effect_id === effectId && r.dispatch_generation >= generation);
}

async function watch(service, effectId, generation, status) {
  for (let poll = 0; poll < POLLS; poll += 1) {
    if (await dispatched(service, effectId, generation)) {
      status.textContent = texts.replayed_dispatched.replace("{generation}", generation);
      return true;
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  status.textContent = texts.replayed_not_yet;
  return false;
}

function confirmation(id) {
  const form = element("form", "", "confirm");
  form.hidden = true;
  const label = element("label", texts.replay_reason);
  label.htmlFor = id;
  const reason = element("textarea");
  Object.assign(reason, { id, name: "reason", required: true, maxLength: 2000, rows: 2 });
  const confirm = element("button", texts.confirm_replay);
  confirm.type = "submit";
  const cancel = element("button", texts.cancel);
  cancel.type = "button";
  form.append(label, reason, confirm, cancel);
  return { form, reason, cancel };
}

export function replayControl(service, effectId, onDone = () => {}) {
  made += 1;
  const box = element("div", "", "replay");
  const open = element("button", texts.replay);
  open.type = "button";
  open.setAttribute("aria-label", `${texts.replay} ${service} ${effectId}`);
  const { form, reason, cancel } = confirmation(`replay-reason-${made}`);
  const status = element("p");
  status.setAttribute("role", "status");
  open.addEventListener("click", () => {
    form.hidden = false;
    open.hidden = true;
    reason.focus();
  });
  cancel.addEventListener("click", () => {
    form.hidden = true;
    open.hidden = false;
    open.focus();
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!reason.value.trim()) {
      reason.setCustomValidity(texts.replay_reason);
      reason.reportValidity();
      return;
    }
    form.querySelectorAll("button").forEach((b) => { b.disabled = true; });
    status.textContent = texts.replaying;
    const path = `/v1/ops/outbox/${encodeURIComponent(service)}/${encodeURIComponent(effectId)}/replay`;
    const replayed = await acting(() => post(path, { reason: reason.value.trim() }));
    if (!replayed) {
      status.textContent = "";
      form.querySelectorAll("button").forEach((b) => { b.disabled = false; });
      return;
    }
    form.hidden = true;
    const generation = replayed.dispatch_generation;
    status.textContent = texts.replayed_waiting.replace("{generation}", generation);
    const out = await watch(service, effectId, generation, status).catch(() => false);
    onDone(out);
  });
  reason.addEventListener("input", () => reason.setCustomValidity(""));
  box.append(open, form, status);
  return box;
}
