// The newest 50 organisations with their members (GET /v1/ops/orgs); a new organisation, a
// member added (or their role and contact changed).
import { acting, api, choices, element, fields, fill, guarded, post, row, say, texts, when } from "./console.js";

const memberForm = document.querySelector("[data-new-member]");

function members(list) {
  const table = element("table");
  const head = element("tr");
  for (const label of [texts.user, texts.role, texts.email, texts.locale]) {
    const th = element("th", label);
    th.scope = "col";
    head.append(th);
  }
  table.append(element("thead"), element("tbody"));
  table.tHead.append(head);
  fill(table, list.map((m) => row([m.user, m.role, m.email || "", m.locale])));
  return table;
}

function card(org) {
  const made = element("article", "", "card");
  made.dataset.org = org.org_id;
  made.append(element("h2", org.name));
  made.append(element("p", `${org.org_id} · ${when(org.created_at)}`));
  made.append(element("h3", texts.members));
  made.append(org.members.length ? members(org.members) : element("p", texts.none));
  return made;
}

async function load(pick) {
  const orgs = await api("/v1/ops/orgs?limit=50");
  document.querySelector("[data-orgs]").replaceChildren(...orgs.map(card));
  document.querySelector("[data-empty]").hidden = orgs.length > 0;
  choices(memberForm.org_id, orgs, (o) => o.org_id, (o) => o.name);
  if (pick) memberForm.org_id.value = pick;
}

document.querySelector("[data-new-org]").addEventListener("submit", async (event) => {
  event.preventDefault();
  const org = await acting(() => post("/v1/ops/orgs", fields(event.target)));
  if (org) {
    say("[data-done]", texts.created_ok);
    await guarded(() => load(org.org_id));
  }
});

memberForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  const { org_id: orgId, email, ...member } = fields(memberForm);
  if (email) member.email = email;
  const added = await acting(() => post(`/v1/ops/orgs/${encodeURIComponent(orgId)}/members`, member));
  if (added) {
    say("[data-done]", texts.created_ok);
    await guarded(() => load(orgId));
  }
});

guarded(() => load());
