// My bookings: the chosen organisation's bookings with their state, payment and access in
// words, followed live while any of them is still changing; the PIN behind a deliberate
// "show PIN" (the API records it as a disclosure); cancel after a confirmation, and moving
// to another free slot of the same studio. Each change is one intent with one key.
import { money, momentAt, spanAt } from "./format.js";
import { forgetIntent, postIntent } from "./intent.js";
import { orgPicker } from "./org.js";
import { ApiProblem, api, clearProblem, identity, showProblem, texts } from "./web.js";

const list = document.querySelector("[data-bookings]");
const FOLLOW_MS = 1500;
const CHOICE_DAYS = 14; // how far ahead another slot may be chosen
const cards = new Map(); // booking_id -> its card: {booking, element, parts}
let orgId = null;
let studios = new Map(); // space_id -> {name, timezone}
let following = null;

const bookingsPath = () => `/v1/orgs/${orgId}/bookings`;
const zoneOf = (booking) => (studios.get(booking.slot.space_id) || { timezone: "UTC" }).timezone;

const DAY_MS = 86400000;

// Still changing on its own: worth reading again soon. A PIN is made shortly before its
// slot starts, so a planned one within a day is followed too.
function changing(booking) {
  const paying = ["pending", "refund_pending"].includes(booking.payment?.state);
  const revoking = booking.access?.state === "revoke_pending";
  const soon = Date.parse(booking.slot.starts_at) - Date.now() < DAY_MS;
  const awaitingPin = booking.state === "confirmed" && (!booking.access || (
    booking.access.state === "planned" && soon));
  return booking.state === "pending" || paying || revoking || awaitingPin;
}

function element(tag, attributes = {}, text = "") {
  const made = document.createElement(tag);
  Object.entries(attributes).forEach(([name, value]) => made.setAttribute(name, value));
  made.textContent = text;
  return made;
}

function button(text, action, onClick, secondary = false) {
  const made = element("button", { type: "button", "data-action": action }, text);
  if (secondary) made.className = "secondary";
  made.addEventListener("click", onClick);
  return made;
}

function field(dl, name, label) {
  dl.append(element("dt", {}, label));
  const value = element("dd", { "data-field": name });
  dl.append(value);
  return value;
}

function paymentWords(booking) {
  if (booking.payment_mode === "pass") return texts.pay_by_pass;
  if (!booking.payment) return texts.pay_none;
  return texts[`pay_${booking.payment.state}`] || booking.payment.state;
}

function accessWords(booking) {
  if (!booking.access) return texts.acc_none;
  return texts[`acc_${booking.access.state}`] || booking.access.state;
}

function studioTitle(booking) {
  const studio = studios.get(booking.slot.space_id);
  const span = spanAt(new Date(booking.slot.starts_at), new Date(booking.slot.ends_at), zoneOf(booking));
  return studio ? `${studio.name}, ${span}` : span;
}

// The card sandbox's page for a checkout left half-way (a reload, a closed tab); only a
// web address, never a script.
function safeUrl(address) {
  try {
    const url = new URL(address || "");
    return ["http:", "https:"].includes(url.protocol) ? url.href : null;
  } catch {
    return null;
  }
}

function show(card) {
  const { booking, parts } = card;
  card.element.dataset.state = booking.state;
  parts.title.textContent = studioTitle(booking);
  parts.state.textContent = texts[`bstate_${booking.state}`] || booking.state;
  parts.price.textContent = money(booking.price);
  parts.payment.textContent = paymentWords(booking);
  parts.payment.dataset.state = booking.payment?.state || "none";
  parts.access.textContent = accessWords(booking);
  parts.access.dataset.state = booking.access?.state || "none";
  const active = booking.access?.state === "active";
  parts.pinButton.hidden = !active;
  if (!active) parts.pin.hidden = true;
  const payAt = safeUrl(booking.payment?.checkout_url);
  parts.pay.hidden = !(booking.state === "pending" && payAt);
  if (payAt) parts.pay.href = payAt;
  parts.cancelButton.hidden = !["pending", "confirmed"].includes(booking.state);
  parts.moveButton.hidden = booking.state !== "confirmed";
  if (parts.cancelButton.hidden) parts.confirm.hidden = true;
  if (parts.moveButton.hidden) parts.move.hidden = true;
}

async function showPin(card) {
  clearProblem();
  const { booking, parts } = card;
  try {
    const access = await api(`${bookingsPath()}/${booking.booking_id}/access`);
    if (!access.pin) {
      parts.pin.hidden = true;
      showProblem(new ApiProblem("pin_not_active", 409));
      return;
    }
    const zone = zoneOf(booking);
    parts.pin.textContent = texts.pin_is
      .replace("{pin}", access.pin)
      .replace("{from}", momentAt(new Date(access.valid_from), zone))
      .replace("{to}", momentAt(new Date(access.valid_to), zone));
    parts.pin.hidden = false;
  } catch (error) {
    showProblem(error);
  }
}

function cancelledWords(booking) {
  if (booking.payment_mode === "pass") return texts.cancelled_pass;
  const paid = ["paid", "refund_pending", "refunded", "refund_failed"];
  return paid.includes(booking.payment?.state) ? texts.cancelled_refund : texts.cancelled_plain;
}

async function cancel(card, yes) {
  yes.disabled = true;
  clearProblem();
  const id = card.booking.booking_id;
  try {
    card.booking = await postIntent(`${bookingsPath()}/${id}/cancel`, {}, `cancel:${id}`);
    card.parts.confirm.hidden = true;
    show(card);
    card.parts.said.textContent = cancelledWords(card.booking);
    card.parts.said.focus(); // the button pressed is gone: the outcome takes the focus
    follow();
  } catch (error) {
    showProblem(error);
  } finally {
    yes.disabled = false;
  }
}

function askToCancel(card) {
  card.parts.move.hidden = true;
  card.parts.confirm.hidden = false;
  card.parts.question.focus();
}

async function otherSlots(booking) {
  const now = new Date();
  const query = new URLSearchParams({
    from: now.toISOString(),
    to: new Date(now.getTime() + CHOICE_DAYS * DAY_MS).toISOString(),
  });
  const space = encodeURIComponent(booking.slot.space_id);
  const slots = await api(`/v1/spaces/${space}/slots?${query}`);
  return slots
    .filter((s) => s.state === "available" && s.slot_id !== booking.slot.slot_id)
    .sort((a, b) => Date.parse(a.starts_at) - Date.parse(b.starts_at));
}

async function chooseSlot(card) {
  clearProblem();
  const { booking, parts } = card;
  parts.confirm.hidden = true;
  try {
    const slots = await otherSlots(booking);
    const zone = zoneOf(booking);
    parts.select.replaceChildren(...slots.map((s) => {
      const option = element("option", { value: s.slot_id });
      option.textContent = spanAt(new Date(s.starts_at), new Date(s.ends_at), zone);
      return option;
    }));
    parts.said.textContent = slots.length ? "" : texts.no_other_slots;
    parts.move.hidden = slots.length === 0;
    if (slots.length) parts.select.focus();
  } catch (error) {
    showProblem(error);
  }
}

async function move(card, confirm) {
  const slotId = card.parts.select.value;
  if (!slotId) return;
  confirm.disabled = true;
  clearProblem();
  const id = card.booking.booking_id;
  const intent = `move:${id}:${slotId}`;
  try {
    const body = { slot_id: slotId };
    card.booking = await postIntent(`${bookingsPath()}/${id}/reschedule`, body, intent);
    forgetIntent(intent); // done: moving back and forth later are new intents
    card.parts.move.hidden = true;
    show(card);
    card.parts.said.textContent = texts.moved.replace("{when}", studioTitle(card.booking));
    card.parts.said.focus();
    follow();
  } catch (error) {
    showProblem(error);
  } finally {
    confirm.disabled = false;
  }
}

function confirmBox(card, id) {
  const box = element("div", { class: "confirm", "data-confirm": "" });
  box.hidden = true;
  const question = element("p", { id: `ask-${id}`, tabindex: "-1" }, texts.cancel_question);
  const yes = button(texts.cancel_yes, "cancel-yes", () => cancel(card, yes));
  const no = button(texts.cancel_no, "cancel-no", () => {
    box.hidden = true;
    card.parts.cancelButton.focus();
  }, true);
  box.append(question, element("div", { class: "actions" }));
  box.lastChild.append(yes, no);
  return { box, question };
}

function moveBox(card, id) {
  const box = element("div", { class: "move", "data-move": "" });
  box.hidden = true;
  const label = element("label", { for: `move-${id}` }, texts.choose_slot);
  const select = element("select", { id: `move-${id}` });
  const go = button(texts.move_here, "move-here", () => move(card, go));
  const back = button(texts.move_back, "move-back", () => {
    box.hidden = true;
    card.parts.moveButton.focus();
  }, true);
  box.append(label, select, element("div", { class: "actions" }));
  box.lastChild.append(go, back);
  return { box, select };
}

function newCard(booking) {
  const id = booking.booking_id;
  const card = { booking, element: element("article", { class: "booking", "data-booking": id }) };
  const title = element("h2", { id: `title-${id}` });
  card.element.setAttribute("aria-labelledby", title.id);
  const dl = element("dl");
  const parts = { title };
  parts.state = field(dl, "state", texts.state);
  parts.price = field(dl, "price", texts.price);
  parts.payment = field(dl, "payment", texts.payment);
  parts.access = field(dl, "access", texts.access);
  const actions = element("div", { class: "actions" });
  parts.pinButton = button(texts.show_pin, "pin", () => showPin(card));
  parts.moveButton = button(texts.reschedule, "move", () => chooseSlot(card), true);
  parts.cancelButton = button(texts.cancel, "cancel", () => askToCancel(card), true);
  parts.pay = element("a", { class: "button", "data-action": "pay" }, texts.pay_now);
  actions.append(parts.pay, parts.pinButton, parts.moveButton, parts.cancelButton);
  parts.pin = element("p", { class: "pin", role: "status", "data-pin": "" });
  parts.pin.hidden = true;
  const { box, question } = confirmBox(card, id);
  const chooser = moveBox(card, id);
  Object.assign(parts, { confirm: box, question, move: chooser.box, select: chooser.select });
  parts.said = element("p", { class: "outcome", role: "status", "data-said": "", tabindex: "-1" });
  card.parts = parts;
  card.element.append(title, dl, actions, parts.pin, box, chooser.box, parts.said);
  return card;
}

function place(bookings) {
  bookings.forEach((booking) => {
    const card = cards.get(booking.booking_id);
    if (card) {
      card.booking = booking;
      show(card);
    } else {
      const made = newCard(booking);
      cards.set(booking.booking_id, made);
      show(made);
    }
  });
  const order = bookings.map((b) => cards.get(b.booking_id).element);
  const same = order.length === list.children.length && order.every((e, i) => list.children[i] === e);
  if (!same) list.replaceChildren(...order);
  document.querySelector("[data-empty]").hidden = bookings.length > 0;
}

async function refresh() {
  const bookings = await api(bookingsPath());
  place(bookings);
  return bookings.some(changing);
}

// Reads the bookings again while any is changing; one follower at a time.
function follow() {
  if (following) return;
  following = setTimeout(async () => {
    following = null;
    try {
      if (await refresh()) follow();
    } catch (error) {
      showProblem(error);
    }
  }, FOLLOW_MS);
}

async function showOrg(chosen) {
  orgId = chosen;
  cards.clear();
  list.replaceChildren();
  if (await refresh()) follow();
}

async function start() {
  const loading = document.querySelector("[data-loading]");
  try {
    if (!identity()) throw new ApiProblem("unauthenticated", 401);
    const spaces = await api("/v1/spaces");
    studios = new Map(spaces.map((s) => [s.space_id, s]));
    const chosen = await orgPicker((changed) => showOrg(changed).catch(showProblem));
    if (chosen) await showOrg(chosen);
    else document.querySelector("[data-empty]").hidden = false;
  } catch (error) {
    showProblem(error);
  } finally {
    loading.hidden = true;
  }
}

start();
