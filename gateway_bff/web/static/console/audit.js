// The audit log (every service's and the gateway's), newest first, of one subject or of all.
import { api, fields, fill, guarded, row, when } from "./console.js";

export function auditRows(entries) {
  return entries.map((e) => row([when(e.at), e.service, e.actor, e.action, e.subject, e.detail_json]));
}

export function showAudit(entries) {
  fill(document.querySelector("[data-audit]"), auditRows(entries), document.querySelector("[data-audit-empty]"));
}

async function load(subject) {
  const query = new URLSearchParams({ limit: "100" });
  if (subject) query.set("subject", subject);
  showAudit((await api(`/v1/ops/audit?${query}`)).entries);
}

const form = document.querySelector("form[data-filter]");
if (form) {
  const asked = new URLSearchParams(location.search).get("subject") || "";
  form.subject.value = asked;
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const { subject } = fields(form);
    history.replaceState(null, "", subject ? `?subject=${encodeURIComponent(subject)}` : "?");
    guarded(() => load(subject.trim()));
  });
  guarded(() => load(asked));
}
