// One Idempotency-Key per intent (a slot to book, a booking to cancel, a pack to buy), kept
// for the browser tab: a double click or a reload repeats the same request, so the API does
// the thing once. A refusal is the intent's final answer; trying again is a new intent.
import { ApiProblem, api } from "./web.js";

const PREFIX = "liftfit.intent.";

function newKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `web-${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

function keyFor(intent) {
  const name = PREFIX + intent;
  const kept = sessionStorage.getItem(name);
  if (kept) return kept;
  const made = newKey();
  sessionStorage.setItem(name, made);
  return made;
}

export function forgetIntent(intent) {
  sessionStorage.removeItem(PREFIX + intent);
}

// Every intent whose name starts so (the order intents, once an order is settled).
export function forgetIntents(start) {
  Object.keys(sessionStorage)
    .filter((name) => name.startsWith(PREFIX + start))
    .forEach((name) => sessionStorage.removeItem(name));
}

export async function postIntent(path, body, intent) {
  try {
    return await api(path, {
      method: "POST",
      body: JSON.stringify(body),
      headers: { "Content-Type": "application/json", "Idempotency-Key": keyFor(intent) },
    });
  } catch (error) {
    if (error instanceof ApiProblem && error.status >= 400 && error.status < 500) {
      forgetIntent(intent);
    }
    throw error;
  }
}
