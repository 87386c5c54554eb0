// Checkout by card: one Idempotency-Key per intent (a slot), kept for the browser tab, so a
// double click or a reload during checkout repeats the same request and books once. Once
// the payment exists, the customer goes to its hosted page to pay.
import { ApiProblem, api } from "./web.js";

const WAIT_MS = 500;
const WAIT_TRIES = 30; // the payment is created asynchronously, within a second or two

function newKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `web-${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

function intentKey(slotId) {
  const name = `liftfit.intent.${slotId}`;
  const kept = sessionStorage.getItem(name);
  if (kept) return kept;
  const made = newKey();
  sessionStorage.setItem(name, made);
  return made;
}

function forgetIntent(slotId) {
  sessionStorage.removeItem(`liftfit.intent.${slotId}`);
}

async function checkoutUrl(orgId, bookingId) {
  for (let tried = 0; tried < WAIT_TRIES; tried += 1) {
    const booking = await api(`/v1/orgs/${orgId}/bookings/${bookingId}`);
    if (booking.payment && booking.payment.checkout_url) return booking.payment.checkout_url;
    await new Promise((resolve) => setTimeout(resolve, WAIT_MS));
  }
  return null;
}

// The booking's card payment page, or null when the payment did not appear in time.
export async function bookByCard(orgId, slotId) {
  const body = JSON.stringify({ slot_id: slotId, party_size: 1, payment_mode: "card" });
  let booking;
  try {
    booking = await api(`/v1/orgs/${orgId}/bookings`, {
      method: "POST",
      body,
      headers: { "Content-Type": "application/json", "Idempotency-Key": intentKey(slotId) },
    });
  } catch (error) {
    // A refusal is this intent's final answer; a new attempt is a new intent.
    if (error instanceof ApiProblem && error.status >= 400 && error.status < 500) {
      forgetIntent(slotId);
    }
    throw error;
  }
  return checkoutUrl(orgId, booking.booking_id);
}
