// What every console page shares: its guard (the operators' API answers 403 to anyone else,
// and the page then says so instead of showing anything), small DOM builders that only ever
// set text, and times and money in the page's language.
import { ApiProblem, api, clearProblem, lang, showProblem, texts } from "../web.js";

export { ApiProblem, api, clearProblem, lang, showProblem, texts };
export const consoleUrl = `/web/${lang}/console`;
export const SERVICES = ["booking", "payment", "access", "notify"];
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

// The visitor is not an operator (403) or not signed in (401): the page shows only that.
function showNoAccess(error) {
  document.querySelectorAll("[data-console]").forEach((part) => part.remove());
  document.querySelector("[data-no-access]").hidden = false;
  document.querySelector("h1").textContent = texts.no_access_title;
  document.title = `${texts.no_access_title} · ${texts.brand}`;
  if (error.status === 401) showProblem(error);
}

export function refused(error) {
  return error instanceof ApiProblem && (error.status === 401 || error.status === 403);
}

// Runs a page's first read; what it cannot read is said in words.
export async function guarded(load) {
  try {
    await load();
  } catch (error) {
    if (refused(error)) showNoAccess(error);
    else showProblem(error);
  } finally {
    document.querySelector("[data-loading]").hidden = true;
  }
}

// An action (a form sent, a button pressed): its problem said in words, the page kept.
export async function acting(act) {
  clearProblem();
  try {
    return await act();
  } catch (error) {
    if (refused(error)) showNoAccess(error);
    else showProblem(error);
    return null;
  }
}

export function post(path, body) {
  return api(path, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body ?? {}),
  });
}

export function element(tag, text = "", className = "") {
  const made = document.createElement(tag);
  if (text !== "") made.textContent = String(text);
  if (className) made.className = className;
  return made;
}

export function row(values) {
  const made = document.createElement("tr");
  for (const value of values) {
    const cell = document.createElement("td");
    if (value instanceof Node) cell.append(value);
    else cell.textContent = value ?? "";
    made.append(cell);
  }
  return made;
}

// Fills a table's body, or shows its "nothing" note instead.
export function fill(table, rows, empty) {
  table.tBodies[0].replaceChildren(...rows);
  table.hidden = rows.length === 0;
  if (empty) empty.hidden = rows.length > 0;
}

export function when(iso, timeZone) {
  if (!iso) return "";
  const options = { dateStyle: "medium", timeStyle: "medium" };
  if (timeZone) options.timeZone = timeZone;
  return new Intl.DateTimeFormat(lang, options).format(new Date(iso));
}

export function money(price) {
  const format = new Intl.NumberFormat(lang, { style: "currency", currency: price.currency });
  const digits = format.resolvedOptions().maximumFractionDigits;
  return format.format(price.amount / 10 ** digits);
}

export function stateWord(state) {
  return texts[`state_${state}`] || state;
}

// A definition list of label -> value pairs (values as text).
export function facts(pairs) {
  const list = element("dl", "", "facts");
  for (const [label, value] of pairs) {
    list.append(element("dt", label), element("dd", value === "" ? "–" : value));
  }
  return list;
}

export function say(where, sentence) {
  document.querySelector(where).textContent = sentence;
}

// The form's fields by name, as text.
export function fields(form) {
  return Object.fromEntries(new FormData(form).entries());
}

// A select's options, one a value, labelled as `label` says.
export function choices(select, values, valueOf, label) {
  select.replaceChildren(...values.map((value) => {
    const option = element("option", label(value));
    option.value = valueOf(value);
    return option;
  }));
}
