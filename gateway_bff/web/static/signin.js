// Sign in: the page keeps the identity it will send, and asks the API who that is
// (GET /v1/me): a token the API refuses is said at once, and the member's own locale becomes
// the page's language unless one was chosen before.
import { api, lang, rememberLanguage, rememberedLanguage, showProblem, signIn, signOut } from "./web.js";

const form = document.querySelector("[data-sign-in]");
const LANGUAGES = ["cs", "en"];

function destination(me) {
  const next = new URLSearchParams(location.search).get("next");
  // Only a page of this site: never a redirect elsewhere.
  if (next && /^\/web\/[a-z]{2}\//.test(next)) return next;
  const own = me.memberships.length ? me.memberships[0].locale : null;
  if (!rememberedLanguage() && LANGUAGES.includes(own)) {
    rememberLanguage(own);
    return `/web/${own}/`;
  }
  return `/web/${lang}/`;
}

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  const kind = form.dataset.signIn;
  const field = form.querySelector(kind === "dev" ? "#user" : "#token");
  const value = field.value.trim();
  if (!value) {
    field.focus();
    return;
  }
  signIn(kind, value);
  try {
    location.assign(destination(await api("/v1/me")));
  } catch (error) {
    signOut();
    showProblem(error);
  }
});
