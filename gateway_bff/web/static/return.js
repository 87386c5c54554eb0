// The way back from the card sandbox: the server named what the payment pays for (a booking
// or an order); this follows it through the API as the signed-in member, in words, until it
// is settled, without reloading the page. It only reads.
import { ApiProblem, api, identity, showProblem, texts } from "./web.js";
import { ORDER_INTENTS, bookingIntent } from "./checkout.js";
import { chosenOrg, memberships } from "./org.js";
import { forgetIntent, forgetIntents } from "./intent.js";

const section = document.querySelector("[data-return]");
const live = document.querySelector("[data-live]");
const EVERY_MS = 1000;
const GIVE_UP_AFTER = 180; // tries: three minutes
const SETTLED = {
  booking: ["confirmed", "expired", "cancelled"],
  order: ["paid", "failed", "cancelled"],
};

function subject() {
  if (section.dataset.booking) return { kind: "booking", id: section.dataset.booking };
  if (section.dataset.order) return { kind: "order", id: section.dataset.order };
  return null;
}

const pathOf = (orgId, what) => `/v1/orgs/${orgId}/${what.kind}s/${encodeURIComponent(what.id)}`;

// The member's organisation that has it: the chosen one first, then the others.
async function findIn(what) {
  const chosen = await chosenOrg();
  const ids = (await memberships()).map((m) => m.org_id);
  for (const orgId of [chosen, ...ids.filter((id) => id !== chosen)]) {
    try {
      return { orgId, found: await api(pathOf(orgId, what)) };
    } catch (error) {
      if (!(error instanceof ApiProblem && error.code === "not_found")) throw error;
    }
  }
  return null;
}

function say(what, found) {
  live.dataset.state = found.state;
  live.textContent = texts[`${what.kind}_said_${found.state}`] || texts.return_waiting;
  const settled = SETTLED[what.kind].includes(found.state);
  document.querySelector("[data-next]").hidden = !settled;
  document.querySelector(what.kind === "booking" ? "[data-to-bookings]" : "[data-to-passes]")
    .hidden = false;
  return settled;
}

// A settled checkout ends its intent: the same slot or pack later is a new one.
function endIntent(what, found) {
  if (what.kind === "booking") forgetIntent(bookingIntent(found.slot.slot_id, "card"));
  else forgetIntents(ORDER_INTENTS);
}

async function follow(what, orgId) {
  for (let tried = 0; tried < GIVE_UP_AFTER; tried += 1) {
    const found = await api(pathOf(orgId, what));
    if (say(what, found)) {
      endIntent(what, found);
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, EVERY_MS));
  }
  live.textContent = texts.return_gave_up;
}

async function start() {
  const what = subject();
  if (!what) return; // the server's sentence about the payment is all there is to say
  if (!identity()) {
    document.querySelector("[data-sign-in-note]").hidden = false;
    return;
  }
  try {
    const where = await findIn(what);
    if (!where) {
      live.textContent = texts.return_not_found;
      return;
    }
    live.textContent = texts.return_waiting;
    await follow(what, where.orgId);
  } catch (error) {
    showProblem(error);
  }
}

start();
