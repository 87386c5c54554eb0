// The studios, read from GET /v1/spaces.
import { api, lang, showProblem } from "./web.js";

const list = document.querySelector("[data-studios]");

async function showStudios() {
  try {
    const spaces = await api("/v1/spaces");
    for (const space of spaces) {
      const link = document.createElement("a");
      link.href = `/web/${lang}/spaces/${encodeURIComponent(space.space_id)}`;
      link.textContent = space.name;
      const item = document.createElement("li");
      item.append(link);
      list.append(item);
    }
    document.querySelector("[data-empty]").hidden = spaces.length > 0;
  } catch (error) {
    showProblem(error);
  } finally {
    document.querySelector("[data-loading]").hidden = true;
  }
}

showStudios();
