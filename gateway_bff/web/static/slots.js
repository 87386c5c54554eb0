// A studio's slots by day, in the studio's local time: GET /v1/spaces for its name and
// time zone, GET /v1/spaces/{id}/slots for the day's slots with their state and price.
import { bookByCard, bookByPass, goToPayment } from "./checkout.js";
import { clockAt, money } from "./format.js";
import { orgPicker } from "./org.js";
import { ApiProblem, api, clearProblem, identity, showProblem, texts } from "./web.js";

const section = document.querySelector("[data-space]");
const spaceId = section.dataset.space;
const dayInput = document.getElementById("day");
const table = document.querySelector("[data-slots]");
const DAY_MS = 24 * 60 * 60 * 1000;
const FREE_SLOT_HORIZON_DAYS = 31; // how far ahead a studio's page looks for its first free slot
let studio = null;
let orgId = null; // the organisation the signed-in member books for (org.js)
let shown = 0; // the newest load wins when days change faster than answers come

// The calendar day (YYYY-MM-DD) of an instant at the studio.
function localDay(instant) {
  return new Intl.DateTimeFormat("en-CA", {
    timeZone: studio.timezone, year: "numeric", month: "2-digit", day: "2-digit",
  }).format(instant);
}

function localTime(instant) {
  return clockAt(instant, studio.timezone);
}

function shiftDay(day, days) {
  return new Date(Date.parse(`${day}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10);
}

function slotRow(slot) {
  const row = document.createElement("tr");
  row.dataset.slot = slot.slot_id;
  const when = document.createElement("td");
  const starts = new Date(slot.starts_at);
  const ends = new Date(slot.ends_at);
  when.textContent = `${localTime(starts)}–${localTime(ends)}`;
  const state = document.createElement("td");
  const badge = document.createElement("span");
  badge.className = `state state-${slot.state}`;
  badge.dataset.state = slot.state;
  badge.textContent = texts[`state_${slot.state}`] || slot.state;
  state.append(badge);
  const price = document.createElement("td");
  price.textContent = money(slot.price);
  const action = document.createElement("td");
  if (orgId && slot.state === "available") {
    action.className = "actions";
    action.append(bookButton(slot, "card"), bookButton(slot, "pass"));
  }
  row.append(when, state, price, action);
  return row;
}

function bookButton(slot, mode) {
  const button = document.createElement("button");
  button.type = "button";
  button.dataset.mode = mode;
  button.textContent = mode === "card" ? texts.book_by_card : texts.book_by_pass;
  if (mode === "pass") button.className = "secondary";
  button.addEventListener("click", () => book(slot, mode, button));
  return button;
}

// Disabled at once: a second click of a double click never reaches the handler.
async function book(slot, mode, button) {
  button.disabled = true;
  clearProblem();
  const status = document.querySelector("[data-booking-status]");
  status.textContent = mode === "card" ? texts.preparing_payment : texts.loading;
  try {
    if (mode === "pass") {
      await bookByPass(orgId, slot.slot_id);
      status.textContent = texts.booked_by_pass;
      await showDay(dayInput.value);
      return;
    }
    if (goToPayment(await bookByCard(orgId, slot.slot_id), status)) return;
  } catch (error) {
    status.textContent = "";
    // The day again first (it clears old problems), then this problem.
    if (error instanceof ApiProblem && error.code === "slot_unavailable") {
      await showDay(dayInput.value);
    }
    showProblem(error);
  }
  button.disabled = false;
}

async function findOrganisation() {
  if (!identity()) return;
  try {
    orgId = await orgPicker((chosen) => {
      orgId = chosen;
    });
  } catch {
    orgId = null; // not signed in as anyone the API knows: the slots are shown, not bookable
  }
}

async function showDay(day) {
  const load = ++shown;
  history.replaceState(null, "", `?day=${day}`);
  clearProblem();
  document.querySelector("[data-loading]").hidden = false;
  // A day at the studio lies within the UTC days around it, whatever its offset.
  const from = `${shiftDay(day, -1)}T00:00:00Z`;
  const to = `${shiftDay(day, 2)}T00:00:00Z`;
  try {
    const query = new URLSearchParams({ from, to });
    const slots = await api(`/v1/spaces/${encodeURIComponent(spaceId)}/slots?${query}`);
    if (load !== shown) return;
    const ofDay = slots
      .filter((slot) => localDay(new Date(slot.starts_at)) === day)
      .sort((a, b) => Date.parse(a.starts_at) - Date.parse(b.starts_at));
    table.tBodies[0].replaceChildren(...ofDay.map(slotRow));
    table.hidden = ofDay.length === 0;
    document.querySelector("[data-empty]").hidden = ofDay.length > 0;
  } catch (error) {
    if (load === shown) showProblem(error);
  } finally {
    if (load === shown) document.querySelector("[data-loading]").hidden = true;
  }
}

function tickClock() {
  const clock = document.querySelector("[data-studio-clock]");
  const now = new Date();
  clock.dateTime = now.toISOString();
  clock.textContent = localTime(now);
}

// The day the link names, else the first day with a free slot (today may be full or
// over), else today.
async function chosenDay() {
  const asked = new URLSearchParams(location.search).get("day");
  if (asked && /^\d{4}-\d{2}-\d{2}$/.test(asked) && !Number.isNaN(Date.parse(asked))) {
    return asked;
  }
  return (await firstFreeDay()) ?? localDay(new Date());
}

async function firstFreeDay() {
  const now = Date.now();
  const from = new Date(now).toISOString();
  const to = new Date(now + FREE_SLOT_HORIZON_DAYS * DAY_MS).toISOString();
  try {
    const query = new URLSearchParams({ from, to });
    const slots = await api(`/v1/spaces/${encodeURIComponent(spaceId)}/slots?${query}`);
    const starts = slots
      .filter((slot) => slot.state === "available" && Date.parse(slot.starts_at) > now)
      .map((slot) => Date.parse(slot.starts_at));
    return starts.length ? localDay(new Date(Math.min(...starts))) : null;
  } catch {
    return null; // the day's own load then shows the problem
  }
}

async function start() {
  try {
    const spaces = await api("/v1/spaces");
    studio = spaces.find((space) => space.space_id === spaceId);
    if (!studio) throw new ApiProblem("not_found", 404);
  } catch (error) {
    document.querySelector("[data-loading]").hidden = true;
    showProblem(error);
    return;
  }
  await findOrganisation();
  document.querySelector("[data-studio-name]").textContent = studio.name;
  document.querySelector("[data-studio-zone]").textContent = `(${studio.timezone})`;
  tickClock();
  setInterval(tickClock, 30000);
  dayInput.value = await chosenDay();
  dayInput.addEventListener("change", () => {
    if (dayInput.value) showDay(dayInput.value);
  });
  document.querySelectorAll("[data-day-step]").forEach((button) => {
    button.addEventListener("click", () => {
      dayInput.value = shiftDay(dayInput.value || localDay(new Date()), Number(button.dataset.dayStep));
      showDay(dayInput.value);
    });
  });
  await showDay(dayInput.value);
}

start();
