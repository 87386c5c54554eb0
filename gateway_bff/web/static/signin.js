// Sign in: the page keeps the identity it will send; the API checks it on each call.
import { lang, signIn } from "./web.js";

const form = document.querySelector("[data-sign-in]");
form.addEventListener("submit", (event) => {
  event.preventDefault();
  const kind = form.dataset.signIn;
  const field = form.querySelector(kind === "dev" ? "#user" : "#token");
  const value = field.value.trim();
  if (!value) {
    field.focus();
    return;
  }
  signIn(kind, value);
  const next = new URLSearchParams(location.search).get("next");
  // Only a page of this site: never a redirect elsewhere.
  location.assign(next && /^\/web\/[a-z]{2}\//.test(next) ? next : `/web/${lang}/`);
});
