// Calls to the server: the device token goes in a header, never in a URL.
import { $, S, TOKEN_KEY, newId } from "./state.js";
import { stopStream } from "./stream.js";

export class Unpaired extends Error {}

export async function api(path, { method = "GET", body, headers = {}, signal } = {}) {
  const res = await fetch(path, {
    method,
    signal,
    cache: "no-store",
    headers: { authorization: `Bearer ${S.token}`, "content-type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (res.status === 401) {
    unpair("This device is not paired (or its token was revoked). Open a new link from `happy web`.");
    throw new Unpaired();
  }
  return res;
}

// A command carries one id for all its attempts: a retry after a lost answer never acts twice.
export async function command(type, fields) {
  const body = { id: newId(), type, ...fields };
  let lastError = "";
  for (let attempt = 0; attempt < 4; attempt++) {
    try {
      const res = await api(`/api/sessions/${encodeURIComponent(S.current)}/command`, { method: "POST", body });
      const answer = await res.json().catch(() => ({}));
      if (res.ok) return { ok: true, ...answer };
      if (res.status < 500) return { ok: false, status: res.status, error: answer.error || res.statusText };
      lastError = answer.error || res.statusText;
    } catch (e) {
      if (e instanceof Unpaired) return { ok: false, error: "not paired" };
      lastError = String(e.message || e);
    }
    await new Promise((r) => setTimeout(r, 300 * 2 ** attempt));
  }
  return { ok: false, error: lastError };
}

// ---- pairing ---------------------------------------------------------------------------------

export function unpair(message) {
  localStorage.removeItem(TOKEN_KEY);
  S.token = null;
  stopStream();
  $("pair-message").textContent = message;
  $("app").hidden = true;
  $("pair-view").hidden = false;
}
