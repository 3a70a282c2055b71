// The transcript: envelopes rendered in batches, one animation frame at a time.
import { $, S, el } from "./state.js";
import { markdown } from "./markdown.js";

// How a tool call ended (`tool-call-end.status`, absent when it succeeded).
const TOOL_ENDS = { failed: "failed", denied: "denied", cancelled: "cancelled" };

export function flush() {
  S.flushing = false;
  const box = $("transcript");
  const stick = box.scrollHeight - box.scrollTop - box.clientHeight < 80;
  const batch = S.queue;
  S.queue = [];
  for (const [seq, env] of batch) {
    try { render(seq, env); } catch (e) { console.error("envelope", seq, e); }
    window.happy.seqs.push(seq);
  }
  if (stick) box.scrollTop = box.scrollHeight;
  const now = performance.timeOrigin + performance.now();
  for (const [seq] of batch) window.happy.rendered.push([seq, now]);
  if (window.happy.rendered.length > 5000) window.happy.rendered.splice(0, 2500);
  if (window.happy.firstPaint === null && batch.length) window.happy.firstPaint = performance.now();
}

function container(env) {
  if (env.subagent) {
    let sub = S.subagents.get(env.subagent);
    if (!sub) {
      sub = el("details", "subagent");
      sub.open = true;
      sub.append(el("summary", "", "Subagent"), el("div", "body"));
      put(containerOf(env.turn), sub);
      S.subagents.set(env.subagent, sub);
    }
    return sub;
  }
  return containerOf(env.turn);
}

function containerOf(turn) {
  if (!turn) return $("transcript");
  let box = S.turns.get(turn);
  if (!box) {
    box = el("div", "turn");
    box.append(el("div", "turn-status", "working…"));
    $("transcript").append(box);
    S.turns.set(turn, box);
  }
  return box;
}

function put(parent, node) {
  // A turn's status line stays last; a subagent's items go in its body.
  if (parent.classList.contains("subagent")) parent.querySelector(".body").append(node);
  else if (parent.classList.contains("turn")) parent.insertBefore(node, parent.lastElementChild);
  else parent.append(node);
}

function render(seq, env) {
  const ev = env.ev;
  const parent = container(env);
  let node = null;
  switch (ev.t) {
    case "text":
      if (ev.thinking) {
        node = el("details", "thinking");
        node.append(el("summary", "", "Thinking"), el("pre", "", ev.text));
      } else if (env.role === "agent") {
        node = markdown(ev.text);
        node.classList.add("msg", "agent");
      } else {
        node = el("div", `msg ${env.role}`, ev.text); // what the user typed, as typed
      }
      break;
    case "service":
      node = markdown(ev.text);
      node.classList.add("service");
      break;
    case "tool-call-start": {
      node = el("details", "tool");
      const summary = el("summary");
      summary.append(el("span", "status", "running"), el("b", "", ev.title || ev.name));
      node.append(summary, el("pre", "", JSON.stringify(ev.args, null, 2)));
      node.dataset.tool = ev.name;
      S.tools.set(ev.call, node);
      break;
    }
    case "tool-call-end": {
      const tool = S.tools.get(ev.call);
      const end = TOOL_ENDS[ev.status] || "done";
      if (tool) { tool.classList.add(end); tool.querySelector(".status").textContent = end; }
      return;
    }
    case "file":
      node = el("div", "file", `📎 ${ev.name} (${ev.size} bytes)`);
      break;
    case "turn-start":
      return; // the turn's box is made by container()
    case "turn-end": {
      const status = S.turns.get(env.turn)?.querySelector(".turn-status");
      if (status) { status.textContent = `turn ${ev.status}`; status.className = `turn-status ${ev.status}`; }
      return;
    }
    case "start":
      if (env.subagent) { parent.querySelector("summary").textContent = ev.title || "Subagent"; return; }
      node = el("div", "service", ev.title ? `started: ${ev.title}` : "session started");
      break;
    case "stop":
      if (env.subagent) { parent.querySelector("summary").textContent += " (done)"; return; }
      node = el("div", "service", "session stopped");
      break;
    default:
      return;
  }
  node.dataset.seq = String(seq);
  put(parent, node);
}

