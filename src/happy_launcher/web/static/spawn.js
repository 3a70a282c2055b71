// New sessions and resumed ones: `happy web` starts them with the daemon's spawner; the page then
// opens them. A refusal is shown as the server's one line of text.
import { $ } from "./state.js";
import { api, Unpaired } from "./api.js";

const MODELS = ["", "sonnet", "opus", "haiku"]; // "": Claude's own default
const MODES = ["default", "acceptEdits", "plan", "bypassPermissions"];

// POST `body` to `path`: { ok, id } or { ok: false, error }.
async function post(path, body) {
  try {
    const res = await api(path, { method: "POST", body });
    const answer = await res.json().catch(() => ({}));
    return res.ok ? { ok: true, id: answer.id } : { ok: false, error: answer.error || res.statusText };
  } catch (e) {
    return { ok: false, error: e instanceof Unpaired ? "not paired" : `cannot reach happy web: ${e.message || e}` };
  }
}

function options(select, values) {
  select.replaceChildren(...values.map((v) => {
    const option = document.createElement("option");
    option.value = v;
    option.textContent = v || "default";
    return option;
  }));
}

export async function openNewSession() {
  $("new-error").textContent = "";
  let choices;
  try {
    const res = await api("/api/spawn");
    if (!res.ok) return;
    choices = await res.json();
  } catch {
    return;
  }
  options($("new-dirs"), choices.directories);
  $("new-dir").value = choices.default;
  if (!$("new-model").options.length) options($("new-model"), MODELS);
  if (!$("new-mode").options.length) options($("new-mode"), MODES);
  $("new-dialog").showModal();
  $("new-prompt").focus();
}

// Resolves to the new session's id, or null (the refusal is shown in the form).
export async function startNewSession() {
  $("new-start").disabled = true;
  $("new-error").textContent = "Starting…";
  const done = await post("/api/spawn", {
    directory: $("new-dir").value.trim(),
    prompt: $("new-prompt").value.trim() || null,
    model: $("new-model").value || null,
    permission_mode: $("new-mode").value || null,
  });
  $("new-start").disabled = false;
  $("new-error").textContent = done.ok ? "" : done.error;
  if (!done.ok) return null;
  $("new-prompt").value = "";
  $("new-dialog").close();
  return done.id;
}

// Resolves to the resumed session's id, or null (the refusal is shown under the header).
export async function resumeSession(id) {
  $("resume").disabled = true;
  $("s-error").textContent = "Resuming…";
  $("s-error").hidden = false;
  const done = await post(`/api/sessions/${encodeURIComponent(id)}/resume`, {});
  $("resume").disabled = false;
  $("s-error").textContent = done.ok ? "" : done.error;
  $("s-error").hidden = done.ok;
  return done.ok ? done.id : null;
}
