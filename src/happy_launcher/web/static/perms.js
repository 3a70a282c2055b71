// Open permission requests: state, rebuilt from the stream after every (re)connect.
import { $, S, el } from "./state.js";
import { command } from "./api.js";

export function renderPerms() {
  const box = $("perms");
  const shown = new Map([...box.children].map((c) => [c.dataset.id, c]));
  for (const [id, node] of shown) if (!S.pending.has(id)) node.remove();
  for (const [id, req] of S.pending) if (!shown.has(id)) box.append(permCard(req));
}

function permCard(req) {
  const card = el("div", "perm");
  card.dataset.id = req.id;
  const reason = el("input");
  reason.placeholder = "Reason (optional, for deny)";
  reason.setAttribute("aria-label", "Reason");
  const error = el("div", "error");
  const allow = el("button", "", "Allow");
  const deny = el("button", "danger", "Deny");
  const abort = el("button", "quiet", "Abort turn");
  allow.dataset.act = "allow";
  deny.dataset.act = "deny";
  const actions = el("div", "actions");
  actions.append(allow, deny, abort);
  card.append(el("h3", "", `${req.tool}: ${req.title}`), el("pre", "", JSON.stringify(req.input, null, 2)), reason, actions, error);
  const answer = async (allowIt) => {
    for (const b of actions.children) b.disabled = true;
    const done = await command("answer", { request_id: req.id, allow: allowIt, message: allowIt ? null : reason.value || null });
    if (done.ok || done.status === 409) { // 409: already settled elsewhere; the stream says how
      if (!done.ok) error.textContent = done.error;
      S.pending.delete(req.id);
      setTimeout(renderPerms, done.ok ? 0 : 1500);
    } else {
      error.textContent = done.error;
      for (const b of actions.children) b.disabled = false;
    }
  };
  allow.addEventListener("click", () => answer(true));
  deny.addEventListener("click", () => answer(false));
  abort.addEventListener("click", () => command("abort", {}));
  return card;
}

