"use strict";
// Services: outside MCP tools beside the devices' (docs/services.md). The
// admin (for everyone or a home) or a home's owner (for that home) creates
// one and copies its URL (shown once: the hub keeps only the
// token's hash), which a program such as mcp-calculator's mcp_pipe.py
// connects to; everyone sees the services of their homes and the hub's,
// online or not, with their tools and last calls, and the admin (or the
// home's owner) revokes them. What services send (names, descriptions, results) is shown with
// textContent, like everything else.

Object.assign(MESSAGES.en, {
  "svc.title": "Services",
  "svc.help": "Outside MCP tools (a calculator, Home Assistant, …) offered to the agent, to voice and to /mcp beside the devices' tools. A program connects to a service's URL as to xiaozhi.me's MCP endpoint.",
  "svc.none": "No services yet.",
  "svc.name": "service name, e.g. calc",
  "svc.hub": "for everyone",
  "svc.create": "Create service",
  "svc.once": "Give this URL to the program (MCP_ENDPOINT=…). It holds the service's secret: it is shown this once and cannot be shown again.",
  "svc.copy": "Copy URL", "svc.copied": "Copied",
  "svc.online": "online", "svc.offline": "offline",
  "svc.configured": "configured in the config file",
  "svc.tools": "{n} tools", "svc.tool1": "1 tool", "svc.noTools": "no tools yet",
  "svc.calls": "last calls", "svc.noCalls": "no calls yet",
  "svc.revoke": "Revoke",
  "svc.confirmRevoke": "Revoke the service \u201c{name}\u201d? Its URL stops working and its program is disconnected at once.",
});
Object.assign(MESSAGES.zh, {
  "svc.title": "服务",
  "svc.help": "外部 MCP 工具（计算器、Home Assistant 等），与设备的工具一起提供给智能体、语音和 /mcp。程序连接服务的地址，就像连接 xiaozhi.me 的 MCP 接入点。",
  "svc.none": "还没有服务。",
  "svc.name": "服务名称，例如 calc",
  "svc.hub": "所有人可用",
  "svc.create": "创建服务",
  "svc.once": "把这个地址交给程序（MCP_ENDPOINT=…）。它包含服务的密钥：只显示这一次，之后无法再次查看。",
  "svc.copy": "复制地址", "svc.copied": "已复制",
  "svc.online": "在线", "svc.offline": "离线",
  "svc.configured": "在配置文件中设置",
  "svc.tools": "{n} 个工具", "svc.tool1": "1 个工具", "svc.noTools": "暂无工具",
  "svc.calls": "最近调用", "svc.noCalls": "暂无调用",
  "svc.revoke": "撤销",
  "svc.confirmRevoke": "撤销服务\u201c{name}\u201d？它的地址立即失效，程序会被断开。",
});
applyLang();

const SVC_PREFIX = "service:"; // a service's calls are recorded under "service:<name>"
let svcCalls = [];

// loadServices shows the services the signed-in person sees, with the
// last calls of each from the call history.
async function loadServices() {
  if (!me) return;
  $("servicesBox").hidden = false;
  $("newService").hidden = !me.admin && !ownedHomes().length;
  const list = (await api("GET", "/api/services")).services || [];
  try { svcCalls = ((await api("GET", "/api/calls")).calls || []).filter(c => String(c.deviceId).startsWith(SVC_PREFIX)); }
  catch { svcCalls = []; }
  if (!$("newService").hidden) syncServiceHomes();
  if (!list.length) { $("services").replaceChildren(lx("li", "muted small", () => t("svc.none"))); return; }
  $("services").replaceChildren(...list.map(serviceItem));
}

function serviceItem(s) {
  const li = el("li", { class: "service", "data-name": s.name });
  const dot = el("span", { class: "dot" + (s.online ? " on" : "") });
  const head = el("div", { class: "row" }, dot, el("strong", {}, s.name),
    lx("span", "small " + (s.online ? "" : "muted"), () => t(s.online ? "svc.online" : "svc.offline")),
    s.home ? el("span", { class: "tag" }, homeName(s.home)) : lx("span", "tag", () => t("svc.hub")),
    el("span", { class: "grow" }));
  if (s.kind !== "configured" && (me.admin || (s.home && ownedHomes().some(h => h.id === s.home)))) {
    const revoke = live(el("button", { class: "plain danger small svc-revoke" }), () => t("svc.revoke"));
    revoke.addEventListener("click", async () => {
      if (!(await confirmBox(t("svc.confirmRevoke", { name: s.name })))) return;
      api("DELETE", "/api/services/" + enc(s.name)).then(loadServices, e => alertIn($("servicesOut"), e));
    });
    head.append(revoke);
  }
  li.append(head);
  if (s.kind === "configured") li.append(lx("div", "muted small", () => t("svc.configured")));
  if (s.error) li.append(el("div", { class: "bad small" }, s.error));
  const tools = s.tools || [];
  li.append(lx("div", "small", () => t(tools.length === 1 ? "svc.tool1" : tools.length ? "svc.tools" : "svc.noTools", { n: tools.length })));
  if (tools.length) li.append(el("ul", { class: "svc-tools" }, ...tools.map(tl =>
    el("li", { class: "small" }, el("span", { class: "mono" }, tl.name), tl.description ? " — " + tl.description : ""))));
  const calls = svcCalls.filter(c => c.deviceId === SVC_PREFIX + s.name).slice(0, 5);
  li.append(lx("div", "small muted", () => t(calls.length ? "svc.calls" : "svc.noCalls")));
  if (calls.length) li.append(el("ul", { class: "svc-calls" }, ...calls.map(c => el("li", { class: "small" },
    lx("span", "nowrap", () => new Date(c.started).toLocaleTimeString(locale())), " ", el("span", { class: "mono" }, c.tool), " ",
    lx("span", c.outcome === "ok" ? "" : "bad", () => t("outcome." + c.outcome)), " ", el("span", { class: "mono res" }, c.result || "")))));
  return li;
}

// ownedHomes are the homes whose services the signed-in person manages
// (the hub decides again: POST and DELETE /api/services).
function ownedHomes() { return me.admin ? homes : homes.filter(h => h.role === "owner"); }

// syncServiceHomes offers the homes a new service may belong to: for the
// admin the hub (everyone) or any home; for an owner, the homes they own.
function syncServiceHomes() {
  const sel = $("newServiceHome");
  const was = sel.value;
  const mine = ownedHomes();
  const hubOption = me.admin ? [live(el("option", { value: "" }), () => t("svc.hub"))] : [];
  sel.replaceChildren(...hubOption, ...mine.map(h => el("option", { value: h.id }, h.name)));
  sel.value = mine.some(h => h.id === was) ? was : (me.admin ? "" : (mine[0] || {}).id || "");
}

$("newService").addEventListener("submit", (ev) => {
  ev.preventDefault();
  $("servicesOut").replaceChildren();
  api("POST", "/api/services", { name: $("newServiceName").value.trim(), home: $("newServiceHome").value }).then(r => {
    $("newServiceName").value = "";
    $("serviceURL").textContent = r.url;
    $("serviceSecret").hidden = false;
    loadServices();
  }, e => alertIn($("servicesOut"), e));
});

$("serviceCopy").addEventListener("click", async () => {
  const text = $("serviceURL").textContent;
  try { await navigator.clipboard.writeText(text); } catch {
    getSelection().selectAllChildren($("serviceURL")); // copy by hand (http, an older browser)
  }
  live($("serviceCopy"), () => t("svc.copied"));
  setTimeout(() => live($("serviceCopy"), () => t("svc.copy")), 2000);
});

// A service's call shows at once; its online state has no event of its
// own, so the list is asked again now and then.
function servicesOnEvent(ev) {
  if (ev.type === "call_finished" && String(ev.deviceId || "").startsWith(SVC_PREFIX)) later("services", loadServices);
}
setInterval(() => {
  if (me) { loadServices().catch(() => {}); return; }
  $("services").replaceChildren(); // signed out: nothing of the services stays
  $("serviceSecret").hidden = true;
  $("serviceURL").textContent = "";
}, 5000);
