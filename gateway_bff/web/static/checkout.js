// Checkout: a booking by card or by pass, and an order of a pass pack, each one intent with
// one Idempotency-Key (intent.js). A card payment is created asynchronously: once it has a
// checkout_url, the customer goes to its hosted page to pay.
import { api, texts } from "./web.js";
import { forgetIntent, postIntent } from "./intent.js";

const WAIT_MS = 500;
const WAIT_TRIES = 30; // the payment is created asynchronously, within a second or two

export const bookingIntent = (slotId, mode) => `book:${slotId}:${mode}`;
export const ORDER_INTENTS = "order:";

async function checkoutUrl(path) {
  for (let tried = 0; tried < WAIT_TRIES; tried += 1) {
    const found = await api(path);
    if (found.payment && found.payment.checkout_url) return found.payment.checkout_url;
    await new Promise((resolve) => setTimeout(resolve, WAIT_MS));
  }
  return null;
}

// The booking's card payment page, or null when the payment did not appear in time.
export async function bookByCard(orgId, slotId) {
  const body = { slot_id: slotId, party_size: 1, payment_mode: "card" };
  const booking = await postIntent(
    `/v1/orgs/${orgId}/bookings`, body, bookingIntent(slotId, "card"),
  );
  return checkoutUrl(`/v1/orgs/${orgId}/bookings/${booking.booking_id}`);
}

// A booking paid with one entry of the organisation's pass: confirmed at once.
export async function bookByPass(orgId, slotId) {
  const intent = bookingIntent(slotId, "pass");
  const body = { slot_id: slotId, party_size: 1, payment_mode: "pass" };
  const booking = await postIntent(`/v1/orgs/${orgId}/bookings`, body, intent);
  forgetIntent(intent); // done: booking the slot again later is a new intent
  return booking;
}

// The order's card payment page, or null when the payment did not appear in time.
export async function buyPlan(orgId, plan) {
  const intent = `${ORDER_INTENTS}${plan.plan_code}:${plan.plan_version}`;
  const body = { plan_code: plan.plan_code, plan_version: plan.plan_version };
  const order = await postIntent(`/v1/orgs/${orgId}/orders`, body, intent);
  if (order.payment && order.payment.checkout_url) return order.payment.checkout_url;
  return checkoutUrl(`/v1/orgs/${orgId}/orders/${order.order_id}`);
}

// To the card sandbox's page once the payment is there (true: the page is leaving); else
// the status says it is not ready yet.
export function goToPayment(payAt, status) {
  if (payAt) {
    location.assign(payAt);
    return true;
  }
  status.textContent = texts.payment_not_ready;
  return false;
}
