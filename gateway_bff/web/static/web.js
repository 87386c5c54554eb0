// What every page shares: its texts, who is signed in, calls to the gateway's API on the
// same origin, and problems said as sentences. Loaded as a module by each page's script.

const data = JSON.parse(document.getElementById("page-data").textContent);
export const lang = data.lang;
export const texts = data.texts;
const problems = data.problems;

// The identity the page sends: a development user name (X-Dev-User) or a bearer token.
const IDENTITY = "liftfit.identity";
const LANGUAGE_COOKIE = "liftfit_lang";

export function identity() {
  try {
    const stored = JSON.parse(localStorage.getItem(IDENTITY) || "null");
    return stored && typeof stored.value === "string" ? stored : null;
  } catch {
    return null;
  }
}

export function signIn(kind, value) {
  localStorage.setItem(IDENTITY, JSON.stringify({ kind, value }));
  showIdentity();
}

export function signOut() {
  localStorage.removeItem(IDENTITY);
  showIdentity();
}

function identityHeaders() {
  const who = identity();
  if (!who) return {};
  return who.kind === "dev" ? { "X-Dev-User": who.value } : { Authorization: `Bearer ${who.value}` };
}

// A problem the API answered (or `network` when no answer came) as an Error the page shows.
export class ApiProblem extends Error {
  constructor(code, status) {
    super(problems[code] || problems.fallback);
    this.code = code;
    this.status = status;
  }
}

export async function api(path, options = {}) {
  const headers = { Accept: "application/json", ...identityHeaders(), ...(options.headers || {}) };
  let response;
  try {
    response = await fetch(path, { ...options, headers });
  } catch {
    throw new ApiProblem("network", 0);
  }
  const body = await response.json().catch(() => null);
  if (!response.ok) {
    const code = body && typeof body.code === "string" ? body.code : "fallback";
    throw new ApiProblem(code, response.status);
  }
  return body;
}

export function showProblem(error) {
  const where = document.querySelector("[data-problem]");
  where.textContent = error instanceof ApiProblem ? error.message : problems.fallback;
  where.hidden = false;
}

export function clearProblem() {
  document.querySelector("[data-problem]").hidden = true;
}

function showIdentity() {
  const who = identity();
  document.querySelectorAll("[data-signed-in]").forEach((item) => {
    item.hidden = !who;
  });
  document.querySelector("[data-signed-out]").hidden = Boolean(who);
  document.querySelector("[data-user]").textContent =
    who && who.kind === "dev" ? who.value : who ? "token" : "";
  showConsoleLink(who);
}

// Who the API says the signed-in user is (GET /v1/me), asked once per page.
let me = null;
export function whoAmI() {
  if (!me) me = api("/v1/me");
  return me;
}

// The console's link only for operators; the console itself is guarded by the API (403).
async function showConsoleLink(who) {
  const link = document.querySelector("[data-operator]");
  link.hidden = true;
  if (!who) {
    me = null;
    return;
  }
  try {
    link.hidden = !(await whoAmI()).operator;
  } catch {
    link.hidden = true;
  }
}

// The language the page remembers for /web: the one last chosen, else the member's own.
export function rememberedLanguage() {
  const found = document.cookie.split("; ").find((c) => c.startsWith(`${LANGUAGE_COOKIE}=`));
  return found ? found.slice(LANGUAGE_COOKIE.length + 1) : null;
}

export function rememberLanguage(chosen) {
  document.cookie = `${LANGUAGE_COOKIE}=${chosen}; path=/web; max-age=31536000; SameSite=Lax`;
}

// The same page in the other language, with what the page chose since (the day shown).
function switchLanguage(event) {
  const link = event.currentTarget;
  link.href = `${link.pathname}${location.search}`;
  rememberLanguage(link.dataset.language);
}

document.querySelector("[data-sign-out]").addEventListener("click", signOut);
document.querySelectorAll("[data-language]").forEach((link) => {
  link.addEventListener("click", switchLanguage);
});
showIdentity();
