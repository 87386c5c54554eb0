// Finding a booking by its id, and how many incidents wait for a decision (the read that
// also tells an operator from anyone else).
import { ApiProblem, UUID, api, clearProblem, consoleUrl, guarded, say, showProblem } from "./console.js";

document.querySelector("[data-find-form]").addEventListener("submit", (event) => {
  event.preventDefault();
  clearProblem();
  const id = document.getElementById("booking-id").value.trim().toLowerCase();
  if (!UUID.test(id)) {
    showProblem(new ApiProblem("not_found", 404));
    return;
  }
  location.assign(`${consoleUrl}/bookings/${id}`);
});

guarded(async () => {
  const { incidents } = await api("/v1/ops/incidents?state=open");
  say("[data-open-incidents]", String(incidents.length));
});
