// Passes: the chosen organisation's balance and its ledger (each change with its reason in
// words), and buying a pass pack: an order of a `pass` plan, paid on the card sandbox's page;
// the return page follows it, and the balance here grows once it is paid.
import { buyPlan, goToPayment } from "./checkout.js";
import { money, momentAt } from "./format.js";
import { orgPicker } from "./org.js";
import { ApiProblem, api, clearProblem, identity, showProblem, texts } from "./web.js";

const HERE = Intl.DateTimeFormat().resolvedOptions().timeZone; // the member's own clock
let orgId = null;

function cell(text) {
  const made = document.createElement("td");
  made.textContent = text;
  return made;
}

function ledgerRow(entry) {
  const row = document.createElement("tr");
  const when = entry.at ? momentAt(new Date(entry.at), HERE) : "";
  const delta = entry.delta > 0 ? `+${entry.delta}` : `\u2212${Math.abs(entry.delta)}`;
  const reason = texts[`reason_${entry.reason}`] || texts.reason_other;
  row.append(cell(when), cell(delta), cell(reason));
  return row;
}

async function showBalance() {
  const passes = await api(`/v1/orgs/${orgId}/passes`);
  document.querySelector("[data-balance]").textContent = String(passes.balance);
  const table = document.querySelector("[data-ledger]");
  table.tBodies[0].replaceChildren(...passes.entries.map(ledgerRow));
  table.hidden = passes.entries.length === 0;
  document.querySelector("[data-no-entries]").hidden = passes.entries.length > 0;
}

// Disabled at once: a second click of a double click never reaches the handler.
async function buy(plan, button) {
  button.disabled = true;
  clearProblem();
  const status = document.querySelector("[data-order-status]");
  status.textContent = texts.preparing_payment;
  try {
    if (goToPayment(await buyPlan(orgId, plan), status)) return;
  } catch (error) {
    status.textContent = "";
    showProblem(error);
  }
  button.disabled = false;
}

function planItem(plan) {
  const item = document.createElement("li");
  item.dataset.plan = `${plan.plan_code}:${plan.plan_version}`;
  const said = document.createElement("span");
  said.textContent = `${plan.name}: ${plan.entries} ${texts.entries}, ${money(plan.price)}`;
  const button = document.createElement("button");
  button.type = "button";
  button.textContent = texts.buy;
  button.setAttribute("aria-label", `${texts.buy}: ${plan.name}`);
  button.addEventListener("click", () => buy(plan, button));
  item.append(said, button);
  return item;
}

async function showPlans() {
  const plans = (await api("/v1/plans")).filter((plan) => plan.kind === "pass");
  document.querySelector("[data-plans]").replaceChildren(...plans.map(planItem));
  document.querySelector("[data-no-plans]").hidden = plans.length > 0;
}

async function showOrg(chosen) {
  orgId = chosen;
  await showBalance();
}

async function start() {
  try {
    if (!identity()) throw new ApiProblem("unauthenticated", 401);
    orgId = await orgPicker((changed) => showOrg(changed).catch(showProblem));
    if (!orgId) throw new ApiProblem("not_found", 404);
    await Promise.all([showOrg(orgId), showPlans()]);
  } catch (error) {
    showProblem(error);
  } finally {
    document.querySelector("[data-loading]").hidden = true;
  }
}

start();
