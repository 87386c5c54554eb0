// Studios and their slots: create a studio, create a slot, close a slot, set its price.
// Slots are shown for the coming four weeks, in the studio's own time zone.
import {
  acting, api, choices, element, fields, fill, guarded, money, post, row, say, stateWord, texts, when,
} from "./console.js";

const chooser = document.querySelector("[data-choose-space]");
const DAY_MS = 24 * 60 * 60 * 1000;
let spaces = [];
let made = 0;

function chosen() {
  return spaces.find((s) => s.space_id === chooser.space.value);
}

function closeButton(slot) {
  if (slot.state !== "available") return "";
  const button = element("button", texts.close_slot);
  button.type = "button";
  button.addEventListener("click", async () => {
    button.disabled = true;
    if (await acting(() => post(`/v1/ops/slots/${slot.slot_id}/close`))) say("[data-done]", texts.saved);
    await loadSlots();
  });
  return button;
}

function priceForm(slot) {
  made += 1;
  const form = element("form", "", "inline");
  const label = element("label", texts.new_price);
  label.htmlFor = `price-${made}`;
  const amount = element("input");
  Object.assign(amount, { id: `price-${made}`, type: "number", min: 1, max: 100000000, required: true });
  amount.value = String(slot.price.amount);
  const send = element("button", texts.set_price);
  send.type = "submit";
  form.append(label, amount, send);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const price = { amount: Number(amount.value), currency: slot.price.currency };
    if (await acting(() => post(`/v1/ops/slots/${slot.slot_id}/price`, { price }))) say("[data-done]", texts.saved);
    await loadSlots();
  });
  return form;
}

function slotRow(slot, timeZone) {
  const made = row([
    `${when(slot.starts_at, timeZone)} – ${when(slot.ends_at, timeZone)}`,
    stateWord(slot.state), money(slot.price), closeButton(slot), priceForm(slot),
  ]);
  made.dataset.slot = slot.slot_id;
  made.dataset.state = slot.state;
  return made;
}

async function loadSlots() {
  const space = chosen();
  if (!space) return;
  const now = Date.now();
  const query = new URLSearchParams({
    from: new Date(now - DAY_MS).toISOString(), to: new Date(now + 28 * DAY_MS).toISOString(),
  });
  const slots = await api(`/v1/spaces/${space.space_id}/slots?${query}`);
  slots.sort((a, b) => Date.parse(a.starts_at) - Date.parse(b.starts_at));
  fill(document.querySelector("[data-slots]"), slots.map((s) => slotRow(s, space.timezone)),
    document.querySelector("[data-empty]"));
}

async function loadSpaces(pick) {
  spaces = await api("/v1/spaces");
  choices(chooser.space, spaces, (s) => s.space_id, (s) => `${s.name} (${s.timezone})`);
  const wanted = pick || new URLSearchParams(location.search).get("space");
  if (spaces.some((s) => s.space_id === wanted)) chooser.space.value = wanted;
  await loadSlots();
}

chooser.addEventListener("submit", (event) => {
  event.preventDefault();
  history.replaceState(null, "", `?space=${encodeURIComponent(chooser.space.value)}`);
  guarded(loadSlots);
});

document.querySelector("[data-new-space]").addEventListener("submit", async (event) => {
  event.preventDefault();
  const space = await acting(() => post("/v1/ops/spaces", fields(event.target)));
  if (space) {
    say("[data-done]", texts.created_ok);
    await guarded(() => loadSpaces(space.space_id));
  }
});

document.querySelector("[data-new-slot]").addEventListener("submit", async (event) => {
  event.preventDefault();
  const space = chosen();
  const asked = fields(event.target);
  if (!space) return;
  const starts = new Date(asked.starts_at);
  const ends = new Date(starts.getTime() + Number(asked.minutes) * 60000);
  const slot = {
    starts_at: starts.toISOString(), ends_at: ends.toISOString(),
    price: { amount: Number(asked.amount), currency: asked.currency },
  };
  if (await acting(() => post(`/v1/ops/spaces/${space.space_id}/slots`, { slots: [slot] }))) {
    say("[data-done]", texts.created_ok);
    await guarded(loadSlots);
  }
});

guarded(() => api("/v1/ops/orgs?limit=1").then(() => loadSpaces()));
