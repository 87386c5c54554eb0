// The plans on sale (GET /v1/plans) and a new one (POST /v1/ops/plans); a plan's code and
// version, once made, never change (409 plan_version_exists, said in words).
import { acting, api, fields, fill, guarded, money, post, row, say, texts } from "./console.js";

async function load() {
  const plans = await api("/v1/plans");
  fill(document.querySelector("[data-plans]"), plans.map((p) => row([
    p.plan_code, String(p.plan_version), texts[`plan_${p.kind}`] || p.kind, p.name, money(p.price),
    String(p.entries), String(p.period_days),
  ])), document.querySelector("[data-empty]"));
}

document.querySelector("[data-new-plan]").addEventListener("submit", async (event) => {
  event.preventDefault();
  const asked = fields(event.target);
  const plan = {
    plan_code: asked.plan_code, plan_version: Number(asked.plan_version), kind: asked.kind,
    name: asked.name, price: { amount: Number(asked.amount), currency: asked.currency },
    entries: Number(asked.entries), period_days: Number(asked.period_days),
  };
  if (await acting(() => post("/v1/ops/plans", plan))) {
    say("[data-done]", texts.created_ok);
    await guarded(load);
  }
});

// The plans are public: an operator's read (the smallest there is) guards the page.
guarded(() => api("/v1/ops/orgs?limit=1").then(load));
