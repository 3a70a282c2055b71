// Browser notifications for what asks for the user (the stream's `attention` frames: a
// permission, a question, a long turn's end, a failure), while the page is open. The browser's
// permission is asked only when the user presses "Notify me"; each event is told once.
import { $, S } from "./state.js";

const NOTIFY_KEY = "happy.notify";

function enabled() {
  return "Notification" in window && Notification.permission === "granted" && localStorage.getItem(NOTIFY_KEY) === "1";
}

function showButton() {
  const button = $("notify");
  button.hidden = !("Notification" in window) || Notification.permission === "denied";
  button.textContent = enabled() ? "Notifying" : "Notify me";
  button.disabled = enabled();
}

export function setUpNotifications() {
  showButton();
  $("notify").addEventListener("click", async () => {
    const permission = await Notification.requestPermission();
    if (permission === "granted") localStorage.setItem(NOTIFY_KEY, "1");
    showButton();
  });
}

export function tell(attention) {
  if (S.told.has(attention.key)) return; // an open request comes again at each reconnection
  S.told.add(attention.key);
  if (!enabled()) return;
  let shown;
  try {
    shown = new Notification(attention.title, { body: attention.body, tag: attention.key });
  } catch {
    return; // a browser that allows only service-worker notifications: the page still shows it all
  }
  shown.addEventListener("click", () => {
    window.focus();
    location.hash = `#s=${encodeURIComponent(attention.session_id)}`;
    shown.close();
  });
}
