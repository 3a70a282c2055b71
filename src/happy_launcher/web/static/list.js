// The session list: each session named by what it is about (its title from the server), then
// directory and time; ended sessions quiet for a day fold under "Older"; hidden ones under
// "Hidden", each with a button to hide or show it again. Text is set with textContent only.
import { $, S, el, ago, baseName } from "./state.js";
import { api, Unpaired } from "./api.js";

const DAY = 24 * 3600 * 1000;

export async function refreshList() {
  if (!S.token) return;
  try {
    const res = await api("/api/sessions");
    if (!res.ok) return;
    S.sessions = await res.json();
  } catch {
    return;
  }
  const shown = S.sessions.filter((s) => !s.hidden);
  const older = shown.filter(isOld);
  const recent = shown.filter((s) => !isOld(s));
  fill($("sessions"), recent);
  fill($("older"), older, $("older-group"), "Older");
  fill($("hidden-sessions"), S.sessions.filter((s) => s.hidden), $("hidden-group"), "Hidden");
  $("no-sessions").hidden = S.sessions.length > 0;
  showHeader();
}

function isOld(s) {
  return s.state !== "running" && Date.now() - (s.last_activity || s.started_at) > DAY;
}

function fill(ul, sessions, group, label) {
  ul.replaceChildren(...sessions.map(sessionItem));
  if (!group) return;
  group.hidden = sessions.length === 0;
  group.querySelector("summary").textContent = `${label} (${sessions.length})`;
}

function sessionItem(s) {
  const li = el("li", s.id === S.current ? "current" : "");
  li.dataset.id = s.id;
  const main = el("div", "main");
  const name = el("div", "name", s.title || baseName(s.cwd));
  name.title = s.title || s.cwd;
  const meta = el("div", "meta muted");
  meta.append(el("span", `badge ${s.state}`, s.state));
  if (s.mode) meta.append(el("span", "badge", s.mode));
  const where = el("span", "where", `${baseName(s.cwd)} · ${ago(s.last_activity || s.started_at)}`);
  where.title = s.cwd;
  meta.append(where);
  main.append(name, meta);
  li.append(main);
  if (s.hidden || s.state !== "running") li.append(visibilityButton(s));
  li.addEventListener("click", () => (location.hash = `#s=${encodeURIComponent(s.id)}`));
  return li;
}

// Only an ended session can be hidden; it comes back by itself when it runs again.
function visibilityButton(s) {
  const button = el("button", "quiet hide", s.hidden ? "Show" : "Hide");
  button.type = "button";
  button.setAttribute("aria-label", `${s.hidden ? "Show" : "Hide"} ${s.title || baseName(s.cwd)}`);
  button.addEventListener("click", async (event) => {
    event.stopPropagation();
    button.disabled = true;
    try {
      const res = await api(`/api/sessions/${encodeURIComponent(s.id)}/hidden`, {
        method: "POST",
        body: { hidden: !s.hidden },
      });
      if (!res.ok) alert(`Cannot ${s.hidden ? "show" : "hide"} it: ${(await res.json().catch(() => ({}))).error || res.statusText}`);
    } catch (e) {
      if (!(e instanceof Unpaired)) alert(`Cannot reach happy web: ${e.message || e}`);
    }
    await refreshList();
  });
  return button;
}

export function showHeader() {
  const s = S.sessions.find((x) => x.id === S.current);
  const running = s ? s.state === "running" && !S.ended : !!S.facts && !S.ended;
  const mode = (s && s.mode) || (S.facts && S.facts.mode) || "";
  const cwd = s ? s.cwd : S.facts ? S.facts.cwd : "";
  $("s-cwd").textContent = (s && s.title) || baseName(cwd);
  $("s-cwd").title = (s && s.title) || cwd;
  const state = running ? "running" : s ? s.state : "ended";
  $("s-meta").textContent = [state, mode && `${mode} mode`, cwd].filter(Boolean).join(" · ");
  $("switch").textContent = mode === "remote" ? "To local" : "To remote";
  $("switch").dataset.to = mode === "remote" ? "local" : "remote";
  for (const id of ["switch", "abort", "send"]) $(id).disabled = !running;
  // An ended session of the store can be continued (its Claude session, `--resume`).
  $("resume").hidden = running || !s || !s.claude_id;
}
