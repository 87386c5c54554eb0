// The organisation the member acts for, on the slots, bookings and passes pages alike: the
// one chosen last (remembered for the browser), else their oldest membership. A member of
// several organisations gets a select to choose; the API's tenancy guards the rest.
import { texts, whoAmI } from "./web.js";

const CHOSEN = "liftfit.org";

export async function memberships() {
  return (await whoAmI()).memberships;
}

export async function chosenOrg() {
  const ids = (await memberships()).map((m) => m.org_id);
  const kept = localStorage.getItem(CHOSEN);
  return ids.includes(kept) ? kept : ids[0] || null;
}

function option(membership, index, chosen) {
  const item = document.createElement("option");
  item.value = membership.org_id;
  item.selected = membership.org_id === chosen;
  item.textContent = texts.organisation_option
    .replace("{n}", String(index + 1))
    .replace("{role}", texts[`role_${membership.role}`] || membership.role)
    .replace("{id}", membership.org_id.slice(0, 8));
  return item;
}

// Shows the choice in [data-org-picker] when there is one to make; calls onChange(orgId)
// after a change. Answers the organisation chosen now (null for no membership).
export async function orgPicker(onChange) {
  const all = await memberships();
  const chosen = await chosenOrg();
  const where = document.querySelector("[data-org-picker]");
  if (!where || all.length < 2) return chosen;
  const label = document.createElement("label");
  label.htmlFor = "org";
  label.textContent = texts.organisation;
  const select = document.createElement("select");
  select.id = "org";
  select.append(...all.map((m, i) => option(m, i, chosen)));
  select.addEventListener("change", () => {
    localStorage.setItem(CHOSEN, select.value);
    onChange(select.value);
  });
  where.replaceChildren(label, select);
  return chosen;
}
