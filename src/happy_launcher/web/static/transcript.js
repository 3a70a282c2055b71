// The transcript: envelopes rendered in batches, one animation frame at a time. A view is where
// envelopes go: the live one (the transcript's end), or a block of earlier ones (earlier.js).
import { $, S, el } from "./state.js";
import { markdown } from "./markdown.js";

// How a tool call ended (`tool-call-end.status`, absent when it succeeded).
const TOOL_ENDS = { failed: "failed", denied: "denied", cancelled: "cancelled" };

export function liveView() {
  return { root: $("transcript"), turns: S.turns, tools: S.tools, subagents: S.subagents };
}

export function flush() {
  S.flushing = false;
  const box = $("transcript");
  const stick = box.scrollHeight - box.scrollTop - box.clientHeight < 80;
  const batch = S.queue;
  S.queue = [];
  const view = liveView();
  for (const [seq, env] of batch) {
    try { render(seq, env, view); } catch (e) { console.error("envelope", seq, e); }
    window.happy.seqs.push(seq);
  }
  if (stick) box.scrollTop = box.scrollHeight;
  const now = performance.timeOrigin + performance.now();
  for (const [seq] of batch) window.happy.rendered.push([seq, now]);
  if (window.happy.rendered.length > 5000) window.happy.rendered.splice(0, 2500);
  if (window.happy.firstPaint === null && batch.length) window.happy.firstPaint = performance.now();
}

function container(env, view) {
  if (env.subagent) {
    let sub = view.subagents.get(env.subagent);
    if (!sub) {
      sub = el("details", "subagent");
      sub.open = true;
      sub.append(el("summary", "", "Subagent"), el("div", "body"));
      put(containerOf(env.turn, view), sub);
      view.subagents.set(env.subagent, sub);
    }
    return sub;
  }
  return containerOf(env.turn, view);
}

function containerOf(turn, view) {
  if (!turn) return view.root;
  let box = view.turns.get(turn);
  if (!box) {
    box = el("div", "turn");
    box.append(el("div", "turn-status", "working…"));
    view.root.append(box);
    view.turns.set(turn, box);
  }
  return box;
}

function put(parent, node) {
  // A turn's status line stays last; a subagent's items go in its body.
  if (parent.classList.contains("subagent")) parent.querySelector(".body").append(node);
  else if (parent.classList.contains("turn")) parent.insertBefore(node, parent.lastElementChild);
  else parent.append(node);
}

function toolEnded(tool, status) {
  const end = TOOL_ENDS[status] || "done";
  tool.classList.add(end);
  tool.querySelector(".status").textContent = end;
}

export function render(seq, env, view) {
  const ev = env.ev;
  const parent = container(env, view);
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
      view.tools.set(ev.call, node);
      if (S.ends.has(ev.call)) toolEnded(node, S.ends.get(ev.call));
      break;
    }
    case "tool-call-end": {
      const tool = view.tools.get(ev.call);
      if (tool) toolEnded(tool, ev.status);
      else S.ends.set(ev.call, ev.status);
      return;
    }
    case "file":
      node = el("div", "file", `📎 ${ev.name} (${ev.size} bytes)`);
      break;
    case "turn-start":
      return; // the turn's box is made by container()
    case "turn-end": {
      S.turnEnds.set(env.turn, ev.status);
      const status = view.turns.get(env.turn)?.querySelector(".turn-status");
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

