"use strict";
// Everything shown here comes from devices and people: it is always put in
// the page with textContent, never parsed as HTML.
//
// Updates are keyed and in place: a device event changes the rows, labels
// and states it concerns, and never rebuilds a form, so what a person is
// typing (a volume, an approval's name) stays, with its focus.
const $ = (id) => document.getElementById(id);
// The admin may paste the admin token (kept in local storage); a person
// signs in with the form, and their session is an HttpOnly cookie the page
// never sees (people.js).
let token = localStorage.getItem("xiaozhi-hub-token") || "";
let me = null; // GET /api/me: {user, admin, actor, homes}; null when signed out
let streamAbort = null;
const devices = new Map(); // id → device as GET /api/devices lists it
const deviceRows = new Map(); // id → li
const actRows = new Map(); // code → {li, a, name, room, expires}
let detail = null; // {id, ...elements, tools: Map, things: Map}

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const k of kids) if (k !== "" && k != null) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}

// live gives e a text computed in the current language, recomputed when
// the language changes.
function live(e, fn) {
  e._tr = fn;
  e.classList.add("tr");
  e.textContent = fn();
  return e;
}
const lx = (tag, cls, fn) => live(el(tag, { class: cls }), fn);

function applyLang() {
  document.documentElement.lang = LANG === "zh" ? "zh-CN" : "en";
  $("lang").value = LANG;
  for (const e of document.querySelectorAll("[data-i18n]")) e.textContent = t(e.dataset.i18n);
  for (const e of document.querySelectorAll("[data-i18n-ph]")) e.placeholder = t(e.dataset.i18nPh);
  for (const e of document.querySelectorAll("[data-i18n-aria]")) e.setAttribute("aria-label", t(e.dataset.i18nAria));
  for (const e of document.querySelectorAll(".tr")) e.textContent = e._tr();
  for (const e of document.querySelectorAll("[data-i18n-label]")) e.dataset.label = t(e.dataset.i18nLabel);
  if (!$("callOutcome").options[1]) {
    for (const o of ["ok", "tool_error", "device_error", "timeout", "offline", "disconnected", "invalid", "sent"])
      $("callOutcome").append(live(el("option", { value: o }), () => t("outcome." + o)));
  }
}

// request is fetch's options for an API request: the pasted token when
// there is one, else the session cookie, and on anything but GET the
// header that proves the request comes from this page (CSRF).
function request(method, body) {
  const headers = { "Content-Type": "application/json" };
  if (token) headers.Authorization = "Bearer " + token;
  if (method !== "GET" && method !== "HEAD") headers["X-XZH-CSRF"] = "1";
  return { method, headers, credentials: "same-origin", body: body === undefined ? undefined : JSON.stringify(body) };
}

// errorText is an error code's text in the page's language with the
// server's detail beside it; an unknown code shows the status (if any)
// and the detail.
function errorText(code, detail, status) {
  const key = "err.code." + code;
  if (code && hasMessage(key)) return t("err.api", { what: t(key), detail });
  return status ? t("err.http", { status, message: detail }) : detail;
}

// apiError is the one place where an API error answer becomes text: the
// error code's translation in the page's language, with the server's own
// detail beside it (the status when the code is unknown).
function apiError(res, data) {
  const e = (data && data.error) || {};
  const detail = e.message || res.statusText || "";
  const err = new Error(errorText(e.code, detail, res.status));
  err.status = res.status;
  err.code = e.code || "";
  err.detail = detail;
  return err;
}

async function api(method, path, body) {
  let res;
  try {
    res = await fetch(path, request(method, body));
  } catch (e) {
    throw new Error(t("err.network", { error: e.message }));
  }
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = { raw: text }; }
  if (!res.ok) {
    const err = apiError(res, data);
    err.retryAfter = Number(res.headers.get("Retry-After")) || 0;
    // The credential is gone (logged out elsewhere, revoked, expired, the
    // user removed): back to the sign-in page.
    if (res.status === 401 && path !== "/api/login") signedOut();
    throw err;
  }
  return data;
}
const enc = encodeURIComponent;

function dur(s) {
  s = Math.max(0, Math.round(s));
  return s >= 60 ? t("dur.min", { n: Math.round(s / 60) }) : t("dur.s", { n: s });
}
function ago(ts) {
  if (!ts || ts.startsWith("0001")) return t("ago.never");
  const s = Math.max(0, Math.round((Date.now() - Date.parse(ts)) / 1000));
  if (s < 60) return t("ago.s", { n: s });
  if (s < 3600) return t("ago.min", { n: Math.round(s / 60) });
  if (s < 86400) return t("ago.h", { n: Math.round(s / 3600) });
  return t("ago.d", { n: Math.round(s / 86400) });
}
const locale = () => (LANG === "zh" ? "zh-CN" : "en");
const devName = (id) => (devices.get(id) && devices.get(id).name) || id || "";

// syncOptions keeps a select's options equal to values (after its first,
// "all", option) without touching it when nothing changed.
function syncOptions(sel, values, label) {
  const have = [...sel.options].slice(1).map(o => o.value);
  if (have.join("\n") === values.join("\n")) return;
  const keep = sel.value;
  while (sel.options.length > 1) sel.remove(1);
  for (const v of values) sel.append(el("option", { value: v }, label ? label(v) : v));
  sel.value = values.includes(keep) ? keep : "";
}

// ---- devices

async function loadDevices() {
  const { devices: list } = await api("GET", "/api/devices");
  devices.clear();
  for (const d of list) devices.set(d.id, d);
  syncOptions($("roomFilter"), [...new Set(list.map(d => d.room).filter(Boolean))].sort());
  syncOptions($("callDevice"), list.map(d => d.id), devName);
  renderDevices();
  renderHomeless();
}

function deviceMeta(d) {
  return [homesShown() && homeName(d.home), d.room, d.mcp ? t("devices.tools", { n: d.toolCount }) : t("devices.things", { n: d.thingCount }),
    d.online ? (d.node ? t("devices.onlineVia", { node: d.node }) : t("devices.online")) : t("devices.seen", { ago: ago(d.lastSeen) })].filter(Boolean).join(" · ");
}

function renderDevices() {
  const all = [...devices.values()];
  const online = all.filter(d => d.online).length;
  live($("count"), () => all.length ? t("devices.count", { online, total: all.length }) : "");
  const q = $("search").value.trim().toLowerCase();
  const room = $("roomFilter").value;
  const shown = all.filter(d => inChosenHome(d) && (!room || d.room === room) &&
    (!q || [d.id, d.name, d.room, d.board, ...(d.aliases || [])].some(s => s && s.toLowerCase().includes(q))));
  const list = $("devices");
  for (const [id, li] of deviceRows) if (!devices.has(id)) { li.remove(); deviceRows.delete(id); }
  for (const c of [...list.children]) if (!c.dataset.id) c.remove();
  let prev = null;
  for (const d of shown) {
    let li = deviceRows.get(d.id);
    if (!li) {
      li = el("li", { class: "device", "data-id": d.id, onclick: () => openDevice(d.id) },
        el("span", { class: "dot" }), el("span", {}, el("strong", {}), " ", el("span", { class: "muted small meta" })));
      deviceRows.set(d.id, li);
    }
    li.classList.toggle("sel", !!detail && detail.id === d.id);
    li.querySelector(".dot").classList.toggle("on", d.online);
    li.querySelector("strong").textContent = d.name || d.id;
    live(li.querySelector(".meta"), () => deviceMeta(devices.get(d.id) || d));
    const want = prev ? prev.nextSibling : list.firstChild;
    if (want !== li) list.insertBefore(li, want);
    prev = li;
  }
  for (const d of all) {
    const li = deviceRows.get(d.id);
    if (li && !shown.includes(d)) li.remove();
  }
  if (!shown.length) list.append(lx("li", "muted", () => t(all.length ? "devices.noMatch" : "devices.none")));
}

// ---- cluster: the nodes alive (shown only on a node of a cluster)

async function loadCluster() {
  let c;
  try { c = await api("GET", "/api/cluster"); } catch { return; }
  $("clusterBox").hidden = !c.clustered;
  if (!c.clustered) return;
  const items = c.nodes.map(n => live(el("li", { class: "node small", "data-node": n.name }), () =>
    n.name + (n.self ? " (" + t("cluster.self") + ")" : "") + " · " + t("cluster.devices", { n: n.devicesOnline })));
  if (c.nats !== "CONNECTED") items.push(live(el("li", { class: "small bad" }), () => t("cluster.nats", { state: c.nats })));
  if (c.historyUnshared) items.push(live(el("li", { class: "small bad" }), () => t("cluster.unshared", { n: c.historyUnshared })));
  $("nodes").replaceChildren(...items);
}

// ---- approvals

async function loadActivations() {
  let acts = [];
  try { acts = (await api("GET", "/api/activations")).activations || []; } catch { return; /* older hub or no OTA */ }
  const list = $("activations");
  const codes = new Set(acts.map(a => a.code));
  for (const [code, r] of actRows) if (!codes.has(code)) { r.li.remove(); actRows.delete(code); }
  for (const c of [...list.children]) if (!c.dataset.code) c.remove();
  for (const a of acts) {
    let r = actRows.get(a.code);
    if (!r) {
      r = { a };
      r.name = el("input", { type: "text", size: 10, class: "act-name", "data-i18n-ph": "act.name", placeholder: t("act.name") });
      r.room = el("input", { type: "text", size: 8, class: "act-room", "data-i18n-ph": "act.room", placeholder: t("act.room") });
      r.expires = el("span", { class: "muted" });
      const btn = el("button", { class: "approve", "data-i18n": "act.approve" }, t("act.approve"));
      btn.addEventListener("click", () => approve(r).then(loadActivations, e => alertIn(r.li, e)));
      r.li = el("li", { class: "act small", "data-code": a.code },
        el("div", { class: "row" }, el("strong", { class: "mono" }, a.code),
          el("span", { class: "muted" }, a.deviceId + (a.board ? " · " + a.board : "")), r.expires),
        a.rebind ? lx("div", "bad", () => t("act.rebind")) : "",
        el("div", { class: "row" }, r.name, r.room, btn));
      actRows.set(a.code, r);
      list.append(r.li);
    }
    r.a = a;
  }
  tickExpiry();
  if (!acts.length) list.append(lx("li", "muted small", () => t("act.none")));
  $("approveAll").hidden = acts.length < 2;
}

function tickExpiry() {
  for (const r of actRows.values()) {
    const left = (Date.parse(r.a.expires) - Date.now()) / 1000;
    live(r.expires, () => isNaN(left) ? "" : left > 0 ? t("act.expires", { left: dur(left) }) : t("act.expired"));
  }
}

function approve(r) {
  return api("POST", "/api/activations/" + enc(r.a.code) + "/approve", { name: r.name.value.trim(), room: r.room.value.trim() });
}

function alertIn(parent, e) {
  const old = parent.querySelector(":scope > pre.err");
  if (old) old.remove();
  parent.append(el("pre", { class: "err" }, e.message));
}

$("approveAll").addEventListener("click", async () => {
  const rows = [...actRows.values()];
  if (!rows.length || !await confirmBox(t("act.confirmAll", { n: rows.length }))) return;
  for (const r of rows) await approve(r).catch(e => alertIn(r.li, e));
  loadActivations();
});

// ---- MCP clients (OAuth)

const mcpRows = new Map(); // request id or client id → li

async function loadMCP() {
  let reqs, clients;
  try {
    // Waiting requests are the admin's list (a person approves their own
    // on the consent page); the clients are each person's own.
    reqs = await api("GET", "/api/oauth/requests").then(r => r.requests || [], e => { if (e.status === 403) return []; throw e; });
    clients = (await api("GET", "/api/oauth/clients")).clients || [];
  } catch { $("mcpBox").hidden = true; return; } // mcp-oauth off
  $("mcpBox").hidden = false;
  const keep = new Set([...reqs.map(r => "r" + r.id), ...clients.map(c => "c" + c.id)]);
  for (const [k, li] of mcpRows) if (!keep.has(k)) { li.remove(); mcpRows.delete(k); }
  for (const r of reqs) {
    if (mcpRows.has("r" + r.id)) continue;
    const allow = el("button", { class: "mcp-allow" }, "");
    const deny = el("button", { class: "plain mcp-deny" }, "");
    live(allow, () => t("mcp.allow"));
    live(deny, () => t("mcp.deny"));
    const li = el("li", { class: "act small", "data-request": r.id },
      el("div", { class: "row" }, el("strong", {}, r.clientName)),
      lx("div", "muted", () => t("mcp.asks", { redirect: r.redirect, address: r.address })),
      el("div", { class: "row" }, allow, deny));
    allow.addEventListener("click", async () => {
      if (!await confirmBox(t(me && !me.admin ? "mcp.confirmAllowUser" : "mcp.confirmAllow", { name: r.clientName }))) return;
      api("POST", "/api/oauth/requests/" + enc(r.id) + "/approve").then(loadMCP, e => alertIn(li, e));
    });
    deny.addEventListener("click", () => api("POST", "/api/oauth/requests/" + enc(r.id) + "/deny").then(loadMCP, e => alertIn(li, e)));
    mcpRows.set("r" + r.id, li);
    $("mcpRequests").append(li);
  }
  const list = $("mcpClients");
  for (const c of [...list.children]) if (!c.dataset.client) c.remove();
  for (const c of clients) {
    let li = mcpRows.get("c" + c.id);
    if (!li) {
      const revoke = live(el("button", { class: "danger small mcp-revoke" }), () => t("mcp.revoke"));
      li = el("li", { class: "small", "data-client": c.id },
        el("div", { class: "row" }, el("strong", {}, c.name), el("span", { class: "grow" }), revoke),
        el("div", { class: "muted mcp-state" }));
      revoke.addEventListener("click", async () => {
        if (!await confirmBox(t("mcp.confirmRevoke", { name: c.name }))) return;
        api("DELETE", "/api/oauth/clients/" + enc(c.id)).then(loadMCP, e => alertIn(li, e));
      });
      mcpRows.set("c" + c.id, li);
      list.append(li);
    }
    const g = c.grants[c.grants.length - 1];
    live(li.querySelector(".mcp-state"), () => !g ? t("mcp.notAllowed") :
      [t("mcp.allowed", { ago: ago(g.approved) }), g.lastUsed ? t("mcp.used", { ago: ago(g.lastUsed) }) : "", (c.redirectUris || []).join(" ")].filter(Boolean).join(" · "));
  }
  if (!clients.length) list.append(lx("li", "muted small", () => t("mcp.none")));
}

// ---- confirmation

// confirmBox asks a question in the modal dialog and resolves to whether
// the person confirmed. The answer is taken from the form's submit event,
// which comes with the click: the dialog's close event is a queued task,
// and the one of a box closed a moment ago can arrive after the next one
// opened.
let confirmAnswer = null;
function answerConfirm(ok) {
  const r = confirmAnswer;
  confirmAnswer = null;
  if (r) r(ok);
}
$("confirm").querySelector("form").addEventListener("submit", (ev) => answerConfirm(ev.submitter?.value === "ok"));
$("confirm").addEventListener("close", () => { if (!$("confirm").open) answerConfirm(false); }); // Esc

function confirmBox(text) {
  const d = $("confirm");
  answerConfirm(false); // a question still open is dropped, as a no
  $("confirmText").textContent = text;
  d.returnValue = "";
  if (!d.open) d.showModal();
  return new Promise(resolve => { confirmAnswer = resolve; });
}

// Tools that reboot, upgrade, unlock or reset a device cannot be undone.
// (English words from their start: "information" is not "format".)
const DESTRUCTIVE = /\b(reboot|restart|upgrade|firmware|unlock|factory|reset|erase|wipe|format)|重启|重新启动|升级|固件|解锁|开锁|恢复出厂|出厂设置|重置|清除|格式化/i;
const words = (s) => (s || "").replace(/([a-z])([A-Z])/g, "$1 $2").replace(/[_.\-/]/g, " ");
const isDestructive = (tool) => DESTRUCTIVE.test(words(tool.name)) || DESTRUCTIVE.test(words(tool.description));

// ---- one device

function openDevice(id) {
  if (!detail || detail.id !== id) buildDetail(id);
  renderDevices();
  refreshDetail();
  if (matchMedia("(max-width: 800px)").matches) $("detail").scrollIntoView({ block: "start" });
}

function buildDetail(id) {
  const d = { id, tools: new Map(), things: new Map() };
  const path = "/api/devices/" + enc(id);
  d.dot = el("span", { class: "dot" });
  d.title = el("span", {});
  d.meta = el("div", { class: "muted small" });
  const input = (cls, size, ph) => {
    const i = el("input", { type: "text", size, class: cls, "data-i18n-ph": ph, placeholder: t(ph) });
    i.addEventListener("input", () => { i.dataset.dirty = "1"; });
    return i;
  };
  d.name = input("dev-name", 16, "detail.name");
  d.room = input("dev-room", 10, "detail.room");
  d.aliases = input("dev-aliases", 22, "detail.aliases");
  d.out = el("span", { class: "small muted" });
  const form = el("form", { class: "row", style: "margin-top:8px" }, d.name, d.room, d.aliases,
    el("button", { type: "submit", class: "plain", "data-i18n": "detail.save" }, t("detail.save")), d.out);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try {
      await api("PATCH", path, { name: d.name.value, room: d.room.value, aliases: d.aliases.value.split(/[,，]/).map(s => s.trim()).filter(Boolean) });
      for (const i of [d.name, d.room, d.aliases]) delete i.dataset.dirty;
      live(d.out, () => t("detail.saved"));
      loadDevices().catch(() => {});
    } catch (e) { d.out._tr = null; d.out.classList.remove("tr"); d.out.textContent = e.message; }
  });
  const revoke = el("button", { class: "plain danger revoke", "data-i18n": "detail.revoke" }, t("detail.revoke"));
  revoke.addEventListener("click", async () => {
    if (!await confirmBox(t("detail.confirmRevoke", { device: devName(id) }))) return;
    try { await api("POST", path + "/token/revoke"); live(d.out, () => t("detail.revoked")); }
    catch (e) { d.out.classList.remove("tr"); d.out.textContent = e.message; }
  });
  const rebind = el("button", { class: "plain danger rebind", "data-i18n": "detail.rebind" }, t("detail.rebind"));
  rebind.addEventListener("click", async () => {
    if (!await confirmBox(t("detail.confirmRebind", { device: devName(id) }))) return;
    try { await api("POST", path + "/rebind", {}); live(d.out, () => t("detail.rebound")); }
    catch (e) { d.out.classList.remove("tr"); d.out.textContent = e.message; }
  });
  // Where the device's next OTA check sends it when the hub offers MQTT.
  d.transport = el("select", { class: "transport", "data-i18n-aria": "detail.transport", "aria-label": t("detail.transport") },
    el("option", { value: "auto", "data-i18n": "detail.transportAuto" }, t("detail.transportAuto")),
    el("option", { value: "websocket", "data-i18n": "detail.transportWS" }, t("detail.transportWS")));
  api("GET", path + "/trust").then(tr => { d.transport.value = tr.transport || "auto"; }).catch(() => {});
  d.transport.addEventListener("change", async () => {
    try { await api("PUT", path + "/transport", { transport: d.transport.value }); live(d.out, () => t("detail.transportSet")); }
    catch (e) { d.out.classList.remove("tr"); d.out.textContent = e.message; }
  });
  const del = el("button", { class: "danger delete", "data-i18n": "detail.delete" }, t("detail.delete"));
  del.addEventListener("click", async () => {
    if (!await confirmBox(t("detail.confirmDelete", { device: devName(id) }))) return;
    try { await api("DELETE", path); gone(); loadDevices().catch(() => {}); }
    catch (e) { d.out.classList.remove("tr"); d.out.textContent = e.message; }
  });
  d.toolsHead = el("h3", {});
  d.toolsBox = el("div", {});
  d.thingsHead = el("h3", { hidden: "" });
  d.thingsBox = el("div", {});
  d.err = el("div", {});
  // A guest reads and calls, and changes nothing (the API refuses it too).
  const home = (devices.get(id) || {}).home;
  const manage = mayManage(home);
  form.hidden = !manage;
  revoke.hidden = del.hidden = !mayOwn(home); // an owner's (or the admin's)
  $("detail").replaceChildren(el("h2", {}, d.dot, " ", d.title), d.meta, form,
    el("div", { class: "row manage", style: "margin-top:8px", hidden: !manage && "" }, revoke, rebind, del, d.transport, leaveButton(id, home, d.out)),
    d.err, d.toolsHead, d.toolsBox, d.thingsHead, d.thingsBox, assistantPanel(id, manage));
  detail = d;
}

function gone() {
  detail = null;
  $("detail").replaceChildren(lx("p", "muted", () => t("detail.gone")));
}

// setIfIdle changes an input's value unless a person is editing it.
function setIfIdle(i, v) {
  if (i === document.activeElement || i.dataset.dirty) return;
  i.value = v;
}

async function refreshDetail() {
  const d = detail;
  if (!d) return;
  const path = "/api/devices/" + enc(d.id);
  try {
    const dev = await api("GET", path);
    if (detail !== d) return;
    d.dot.classList.toggle("on", dev.online);
    d.title.textContent = dev.name || dev.id;
    live(d.meta, () => [dev.id, homeName(dev.home), dev.board, dev.firmware && t("detail.firmware", { v: dev.firmware }),
      t("detail.protocol", { v: dev.protocolVersion }), dev.transport && (dev.transport === "mqtt" ? "MQTT" : "WebSocket"), dev.online ? t("devices.online") : t("detail.lastSeen", { ago: ago(dev.lastSeen) })]
      .filter(Boolean).join(" · "));
    setIfIdle(d.name, dev.name || "");
    setIfIdle(d.room, dev.room || "");
    setIfIdle(d.aliases, (dev.aliases || []).join(", "));
    if (dev.mcp) {
      const tl = await api("GET", path + "/tools");
      if (detail !== d) return;
      live(d.toolsHead, () => t("detail.tools") + (tl.stale ? " " + t("detail.refreshing") : ""));
      syncKeyed(d.toolsBox, d.tools, tl.tools || [], tool => tool.name,
        tool => JSON.stringify([tool.description, tool.inputSchema, tool.userOnly, tool.unchecked]), tool => toolBlock(d.id, tool));
    } else d.toolsHead.hidden = true;
    const things = (await api("GET", path + "/iot")).things || [];
    if (detail !== d) return;
    d.thingsHead.hidden = !things.length;
    live(d.thingsHead, () => t("detail.things"));
    syncKeyed(d.thingsBox, d.things, things, th => th.name,
      th => JSON.stringify([th.description, th.methods]), th => thingBlock(d.id, th));
    for (const th of things) d.things.get(th.name).state.textContent = JSON.stringify(th.state || {}, null, 1);
    d.err.replaceChildren();
  } catch (e) {
    if (e.status === 404) { gone(); return; }
    d.err.replaceChildren(el("pre", { class: "err" }, e.message));
  }
}

// syncKeyed makes box show one block per item, in order, keeping the block
// of every item whose signature did not change (and the inputs in it).
function syncKeyed(box, blocks, items, key, sig, make) {
  const keys = new Set(items.map(key));
  for (const [k, b] of blocks) if (!keys.has(k)) { b.el.remove(); blocks.delete(k); }
  let prev = null;
  for (const it of items) {
    const k = key(it), s = sig(it);
    let b = blocks.get(k);
    if (!b || b.sig !== s) {
      const nb = make(it);
      nb.sig = s;
      if (b) b.el.replaceWith(nb.el);
      blocks.set(k, nb);
      b = nb;
    }
    const want = prev ? prev.nextSibling : box.firstChild;
    if (want !== b.el) box.insertBefore(b.el, want);
    prev = b.el;
  }
}

// toolBlock is a tool with a form built from its inputSchema (the firmware
// uses boolean, integer and string properties).
function toolBlock(deviceId, tool) {
  const schema = tool.inputSchema || {};
  const props = schema.properties || {};
  const required = new Set(schema.required || []);
  const danger = isDestructive(tool);
  const inputs = {};
  const form = el("form", {});
  for (const [name, p] of Object.entries(props)) {
    let input;
    if (p.type === "boolean") input = el("input", { type: "checkbox", name });
    else if (p.type === "integer" || p.type === "number") {
      input = el("input", { type: "number", name, style: "width:7em", step: p.type === "integer" ? "1" : "any" });
      if (p.minimum !== undefined) input.min = p.minimum;
      if (p.maximum !== undefined) input.max = p.maximum;
    } else input = el("input", { type: "text", name, size: 14 });
    // String defaults are hints only: firmware declares the url of
    // self.upgrade_firmware with its description as "default".
    if (p.default !== undefined) {
      if (p.type === "boolean") input.checked = !!p.default;
      else if (p.type === "string") input.placeholder = p.default;
      else input.value = p.default;
    }
    inputs[name] = [input, p];
    form.append(el("label", { class: "small" }, name + (required.has(name) ? "*" : "") + " ", input));
  }
  const out = el("div", {});
  form.append(el("button", { type: "submit", class: "call" + (danger || tool.userOnly ? " danger" : ""), "data-i18n": "tool.call" }, t("tool.call")));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (danger || tool.userOnly) {
      const why = [tool.userOnly && t("tool.whyUserOnly"), danger && t("tool.whyDestructive")].filter(Boolean).join("\n");
      if (!await confirmBox(t("tool.confirm", { tool: tool.name, device: devName(deviceId), why, desc: tool.description || "" }))) return;
    }
    const args = {};
    for (const [name, [input, p]] of Object.entries(inputs)) {
      if (p.type === "boolean") args[name] = input.checked;
      else if (input.value === "") continue;
      else if (p.type === "integer" || p.type === "number") args[name] = Number(input.value);
      else args[name] = input.value;
    }
    out.replaceChildren(lx("pre", "", () => t("tool.calling")));
    try {
      const r = await api("POST", "/api/devices/" + enc(deviceId) + "/tools/" + enc(tool.name) + "/call", { arguments: args });
      const texts = (r.content || []).map(c => c.text !== undefined ? c.text : JSON.stringify(c)).join("\n");
      out.replaceChildren(texts ? el("pre", { class: "result" + (r.isError ? " err" : "") }, texts) : lx("pre", "result", () => t("tool.empty")));
    } catch (e) { out.replaceChildren(el("pre", { class: "result err" }, e.message)); }
  });
  const tags = [tool.userOnly && lx("span", "tag warn", () => t("detail.userOnly")),
    danger && lx("span", "tag warn", () => t("detail.destructive")),
    tool.unchecked && live(el("span", { class: "tag", title: tool.unchecked }), () => t("detail.unchecked"))].filter(Boolean);
  const box = el("div", { class: "tool", "data-tool": tool.name },
    el("div", { class: "row" }, el("span", { class: "name" }, tool.name), ...tags),
    el("div", { class: "muted small" }, tool.description || ""), form, out);
  return { el: box };
}

function thingBlock(deviceId, th) {
  const state = el("pre", { class: "state" });
  const box = el("div", { class: "tool", "data-thing": th.name },
    el("div", {}, el("span", { class: "name" }, th.name), " ", el("span", { class: "muted small" }, th.description || "")), state);
  for (const [m, desc] of Object.entries(th.methods || {})) {
    const inputs = {};
    const form = el("form", { class: "row", "data-method": m }, el("span", { class: "small", title: desc.description || "" }, m));
    for (const [pn, p] of Object.entries(desc.parameters || {})) {
      const input = p.type === "boolean" ? el("input", { type: "checkbox", name: pn })
        : el("input", { type: p.type === "number" ? "number" : "text", name: pn, style: "width:7em", placeholder: pn });
      inputs[pn] = [input, p];
      form.append(input);
    }
    const out = el("span", { class: "small muted out" });
    form.append(el("button", { type: "submit", class: "plain", "data-i18n": "iot.send" }, t("iot.send")), out);
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const parameters = {};
      for (const [pn, [input, p]] of Object.entries(inputs))
        parameters[pn] = p.type === "boolean" ? input.checked : p.type === "number" ? Number(input.value) : input.value;
      try {
        await api("POST", "/api/devices/" + enc(deviceId) + "/iot/commands", { commands: [{ name: th.name, method: m, parameters }] });
        live(out, () => t("iot.sent"));
      } catch (e) { out.classList.remove("tr"); out.textContent = e.message; }
    });
    box.append(form);
  }
  return { el: box, state };
}

// ---- call history

let calls = [];
async function loadCalls() {
  const dev = $("callDevice").value;
  try { calls = (await api("GET", "/api/calls" + (dev ? "?device=" + enc(dev) : ""))).calls || []; }
  catch { return; }
  renderCalls();
}

// cell labels a call history cell with its column's name, which the
// phone layout shows in front of it (a card per call, no table header).
function cell(key, td) {
  td.dataset.i18nLabel = key;
  td.dataset.label = t(key);
  return td;
}

// callWho is who made a call: the person or credential (by), and how
// (the caller: rest, mcp, agent…) when that adds something.
function callWho(c) {
  if (!c.by) return c.caller || "";
  return c.caller && c.caller !== c.by ? c.by + " · " + c.caller : c.by;
}

function renderCalls() {
  const tool = $("callTool").value.trim().toLowerCase();
  const outcome = $("callOutcome").value;
  const rows = calls.filter(c => (!tool || c.tool.toLowerCase().includes(tool)) && (!outcome || c.outcome === outcome));
  const body = $("calls").tBodies[0];
  // In a cluster each record names the node that made the call, and ids
  // are each node's own.
  body.replaceChildren(...rows.slice(0, 200).map(c => el("tr", { "data-id": (c.node ? c.node + "/" : "") + c.id },
    cell("calls.time", lx("td", "nowrap", () => new Date(c.started).toLocaleString(locale()))),
    cell("calls.device", el("td", {}, devName(c.deviceId))),
    cell("calls.toolCol", el("td", { class: "mono" }, c.tool)),
    cell("calls.caller", el("td", { class: "who" }, callWho(c), c.node ? el("span", { class: "muted small node" }, " · " + c.node) : "")),
    cell("calls.outcome", lx("td", c.outcome === "ok" || c.outcome === "sent" ? "" : "bad", () => t("outcome." + c.outcome))),
    cell("calls.duration", el("td", {}, Math.round(c.durationMs))),
    cell("calls.result", el("td", { class: "res mono" }, (c.arguments || "") + " → " + (c.result || ""))))));
  if (!rows.length) body.append(el("tr", {}, live(el("td", { colspan: 7, class: "muted" }), () => t(calls.length ? "calls.noMatch" : "calls.none"))));
}
$("callDevice").addEventListener("change", loadCalls);
$("callTool").addEventListener("input", renderCalls);
$("callOutcome").addEventListener("change", renderCalls);

// ---- Server-Sent Events over fetch (EventSource cannot send the token)

async function readSSE(res, onEvent) {
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += dec.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const chunk = buf.slice(0, i); buf = buf.slice(i + 2);
      const data = chunk.split("\n").filter(l => l.startsWith("data:")).map(l => l.slice(5).replace(/^ /, "")).join("\n");
      if (!data) continue;
      let ev;
      try { ev = JSON.parse(data); } catch { continue; }
      onEvent(ev);
    }
  }
}

// ---- the agent

const chatSession = sessionStorage.getItem("xiaozhi-hub-chat") || ("dashboard-" + Math.random().toString(36).slice(2, 10));
sessionStorage.setItem("xiaozhi-hub-chat", chatSession);

$("chatForm").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const input = $("chatInput");
  const message = input.value.trim();
  if (!message) return;
  input.value = "";
  const log = $("chatLog");
  const add = (e) => { log.append(e); log.scrollTop = log.scrollHeight; return e; };
  add(el("div", { class: "msg me" }, message));
  const button = $("chatForm").querySelector("button");
  button.disabled = true;
  let answer = null;
  try {
    const res = await fetch("/api/agent/chat", request("POST", { message, session: chatSession }));
    if (!res.ok) {
      let data = null;
      try { data = await res.json(); } catch { }
      throw apiError(res, data);
    }
    const labels = {}; // tool call id → what it called, for its result
    await readSSE(res, (e) => {
      const args = e.arguments ? JSON.stringify(e.arguments) : "";
      const label = () => labels[e.id] || (e.deviceId ? devName(e.deviceId) + ": " : "") + (e.target || e.name || "");
      switch (e.type) {
        case "tool_call":
          labels[e.id] = label();
          add(lx("div", "msg step", () => t("chat.toolCall", { name: label(), args })));
          break;
        case "tool_result": add(lx("div", "msg step" + (e.isError ? " err" : ""), () => t(e.isError ? "chat.toolError" : "chat.toolResult", { name: label(), content: e.content || e.code || "" }))); break;
        case "text":
          if (!answer) answer = add(el("div", { class: "msg answer" }));
          answer.textContent += e.text || "";
          break;
        case "done":
          if (!answer && e.text) answer = add(el("div", { class: "msg answer" }, e.text));
          add(lx("div", "msg step", () => t("chat.done", { steps: e.steps || 0 })));
          break;
        case "error": add(lx("div", "msg err", () => t("chat.error", { message: errorText(e.code, e.message || "", 0) || e.code || "" }))); break;
      }
    });
  } catch (e) {
    add(el("div", { class: "msg err" }, e.message));
  } finally { button.disabled = false; }
});

// ---- live events

function eventText(ev) {
  const d = ev.data || {};
  // online and device_updated carry the device as it is now.
  const named = d.id === ev.deviceId && typeof d.name === "string" && d.name;
  const a = { device: named || devName(ev.deviceId), type: d.type || ev.type };
  switch (ev.type) {
    case "offline": a.reason = d.reason ? " (" + d.reason + ")" : ""; break;
    case "tools_changed": {
      a.count = d.count;
      const parts = [...(d.added || []).map(n => "+" + n), ...(d.removed || []).map(n => "−" + n), ...(d.changed || []).map(n => "~" + n)];
      a.diff = parts.length ? ": " + parts.join(", ") : "";
      break;
    }
    case "tools_error": case "protocol_error": a.error = d.error || d.reason ? ": " + (d.error || d.reason) : ""; break;
    case "iot_changed": a.thing = d.thing || ""; a.state = d.state ? " " + JSON.stringify(d.state) : ""; break;
    case "call_finished":
      Object.assign(a, { tool: d.tool, caller: d.caller + (ev.node ? " · " + ev.node : ""), outcome: t("outcome." + d.outcome), ms: Math.round(d.durationMs || 0) }); break;
    case "identity_refused": case "device_rebound": a.clientId = d.clientId || "?"; break;
    case "events_dropped": a.count = d.count; break;
  }
  const key = "ev." + ev.type;
  return t(MESSAGES.en[key] ? key : "ev.other", a);
}

function showEvent(ev) {
  const log = $("events");
  const time = new Date(ev.time || Date.now());
  const bad = /error|refused|dropped/.test(ev.type) || (ev.type === "call_finished" && ev.data && !["ok", "sent"].includes(ev.data.outcome));
  log.prepend(live(el("div", { class: bad ? "bad" : "" }), () => time.toLocaleTimeString(locale()) + "  " + eventText(ev)));
  while (log.childElementCount > 200) log.lastChild.remove();
}

const timers = {};
function later(name, fn) {
  clearTimeout(timers[name]);
  timers[name] = setTimeout(() => { Promise.resolve(fn()).catch(() => {}); }, 300);
}

function onEvent(ev) {
  showEvent(ev);
  servicesOnEvent(ev); // services.js
  switch (ev.type) {
    case "call_finished": later("calls", loadCalls); return;
    case "device_message": case "protocol_error": return;
  }
  later("devices", loadDevices);
  later("acts", loadActivations);
  if (ev.type === "online" || ev.type === "offline") later("cluster", loadCluster);
  if (detail && ev.deviceId === detail.id && ev.type !== "device_deleted") later("detail", refreshDetail);
  if (detail && ev.deviceId === detail.id && ev.type === "device_deleted") gone();
}

async function stream() {
  if (streamAbort) streamAbort.abort();
  streamAbort = new AbortController();
  const signal = streamAbort.signal;
  while (!signal.aborted) {
    try {
      const res = await fetch("/api/events", { ...request("GET"), signal });
      if (res.status === 401) { signedOut(); return; }
      if (!res.ok) {
        let data = null;
        try { data = await res.json(); } catch { }
        throw apiError(res, data);
      }
      live($("status"), () => t("status.live"));
      await readSSE(res, onEvent);
    } catch (e) {
      if (signal.aborted) return;
      live($("status"), () => t("status.retry", { error: e.message }));
    }
    await new Promise(r => setTimeout(r, 2000));
  }
}

async function refresh() {
  try {
    await loadMe();
    await loadHomes();
    await loadDevices();
    live($("status"), () => t("status.connected"));
    loadPeople().catch(() => {});
    loadServices().catch(() => {}); // services.js
    loadSettings().catch(() => {});
    if (me.admin) loadActivations();
    loadMCP();
    loadCluster();
    loadCalls();
    if (detail) refreshDetail();
    return true;
  } catch (e) {
    const msg = e.message;
    live($("status"), () => e.status === 401 ? (token ? t("status.badToken") : t("status.notConnected")) : msg);
    return false;
  }
}
