"use strict";
// People and homes: signing in and out, the home switcher, members and
// their roles, adding a device by the code it speaks, personal tokens, and
// the admin's users, homes and devices in no home. What people typed
// (names, home names) is shown with textContent, like everything else.
//
// The server decides: a control hidden here is refused there as well; the
// page only leaves out what the person's role cannot do.

let homes = []; // GET /api/homes: the signed-in person's homes, with their role
let chosenHome = localStorage.getItem("xiaozhi-hub-home") || ""; // "" all, "-" no home (admin), else a home id
const ROLES = ["owner", "member", "guest"];

// ---- who is signed in

// loadMe asks who the credential is; an older hub without /api/me has only
// the admin token.
async function loadMe() {
  try { me = await api("GET", "/api/me"); } catch (e) {
    if (e.status !== 404 || !token) throw e;
    me = { user: "", admin: true, actor: "admin", homes: [] };
  }
  document.body.dataset.auth = token ? "token" : "session";
  $("whoBox").hidden = false;
  live($("who"), () => me.admin ? t("login.asAdmin") : t("login.as", { user: me.user }));
  $("actBox").hidden = !me.admin;
  $("adminBox").hidden = !me.admin;
  $("tokensBox").hidden = me.admin;
  $("newHome").hidden = me.admin;
}

// signedOut shows the sign-in page and forgets what the page showed.
function signedOut() {
  if (document.body.dataset.auth === "out") return;
  const had = me !== null;
  me = null;
  homes = [];
  if (streamAbort) streamAbort.abort();
  document.body.dataset.auth = "out";
  $("whoBox").hidden = true;
  devices.clear();
  renderDevices();
  detail = null;
  $("detail").replaceChildren(lx("p", "muted", () => t("detail.select")));
  for (const id of ["members", "tokens", "users", "allHomes", "homeless", "chatLog", "events"]) $(id).replaceChildren();
  $("tokenSecret").hidden = true;
  $("tokenSecretText").textContent = "";
  live($("status"), () => token ? t("status.badToken") : had ? t("login.ended") : t("status.notConnected"));
  $("loginName").focus();
}

$("loginForm").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const button = $("loginButton");
  const out = $("loginError");
  out.textContent = "";
  button.disabled = true;
  let wait = 0;
  try {
    // The session is the cookie: the answer holds no token.
    token = "";
    localStorage.removeItem("xiaozhi-hub-token");
    $("token").value = "";
    await api("POST", "/api/login", { name: $("loginName").value.trim(), password: $("loginPassword").value, cookie: true });
    $("loginPassword").value = "";
    if (await refresh()) stream();
  } catch (e) {
    if (e.status === 429) {
      wait = e.retryAfter || 30;
      live(out, () => t("login.wait", { wait: dur(wait) }));
    } else if (e.status === 401) live(out, () => t("login.wrong"));
    else { out.classList.remove("tr"); out.textContent = e.message; }
  } finally {
    // After too many failures the button waits as long as the hub does.
    setTimeout(() => { button.disabled = false; }, wait * 1000);
  }
});

$("logout").addEventListener("click", async () => {
  if (!token) await api("POST", "/api/logout").catch(() => {});
  token = "";
  localStorage.removeItem("xiaozhi-hub-token");
  $("token").value = "";
  signedOut();
  live($("status"), () => t("login.loggedOut"));
});

// ---- homes

function roleIn(home) {
  const h = homes.find(x => x.id === home);
  return h ? h.role || "" : "";
}
// mayManage: the admin, or an owner or member of the device's home (a
// guest changes nothing).
const mayManage = (home) => !!me && (me.admin || ["owner", "member"].includes(roleIn(home)));
const mayOwn = (home) => !!me && (me.admin || roleIn(home) === "owner");
const homesShown = () => !!me && (me.admin || homes.length > 1) && chosenHome === "";
function homeName(id) {
  if (!id) return me && me.admin ? t("home.noHome") : "";
  const h = homes.find(x => x.id === id);
  return h ? h.name : id;
}
const inChosenHome = (d) => !chosenHome || (chosenHome === "-" ? !d.home : d.home === chosenHome);

async function loadHomes() {
  homes = await fetchHomes();
  const sel = $("homeSel");
  const several = me.admin || homes.length > 1;
  const ids = homes.map(h => h.id);
  if (!(chosenHome === "" && several) && !(chosenHome === "-" && me.admin) && !ids.includes(chosenHome))
    chosenHome = several ? "" : (ids[0] || "");
  const opts = [];
  if (several) opts.push(live(el("option", { value: "" }), () => t("home.all")));
  for (const h of homes)
    opts.push(live(el("option", { value: h.id }), () => h.role ? t("home.option", { name: h.name, role: t("role." + h.role) }) : h.name));
  if (me.admin) opts.push(live(el("option", { value: "-" }), () => t("home.noHome")));
  sel.replaceChildren(...opts);
  sel.value = chosenHome;
  sel.hidden = !opts.length;
  $("homeNone").hidden = !!homes.length || me.admin;
  renderHome();
}

const fetchHomes = () => api("GET", "/api/homes").then(r => r.homes || [], e => { if (e.status === 404 && me.admin) return []; throw e; }); // 404: a hub before homes

// followHomes notices homes and roles changed by others (no event tells):
// being added to a home, a new role, a home deleted.
async function followHomes() {
  const now = await fetchHomes();
  if (me && JSON.stringify(now) !== JSON.stringify(homes)) await loadPeople().then(() => loadDevices());
}

$("homeSel").addEventListener("change", () => {
  chosenHome = $("homeSel").value;
  localStorage.setItem("xiaozhi-hub-home", chosenHome);
  renderDevices();
  renderHome();
});

// renderHome shows the chosen home: its members (controls for its owners)
// and the form that adds a device by its code (owners and members).
async function renderHome() {
  const id = chosenHome;
  const h = homes.find(x => x.id === id);
  const role = h ? h.role || "" : "";
  const tag = $("homeRole");
  tag.hidden = !role;
  live(tag, () => role ? t("role." + role) : "");
  $("homePanel").hidden = !h;
  if (!h) return;
  const owner = mayOwn(id);
  $("addMember").hidden = !owner;
  $("addDevice").hidden = $("addDeviceHelp").hidden = !mayManage(id);
  $("leaveHome").hidden = me.admin || owner;
  $("deleteHome").hidden = !owner;
  homePersona(id, mayManage(id)); // assistant.js
  let view = h;
  try { view = await api("GET", "/api/homes/" + enc(id)); } catch (e) { if (e.status !== 404) alertIn($("homeOut"), e); }
  if (chosenHome !== id) return;
  $("membersHidden").hidden = !!view.members;
  $("members").replaceChildren(...(view.members || []).map(m => memberRow(id, m, owner)));
}

function memberRow(home, m, owner) {
  const li = el("li", { class: "member row small", "data-user": m.user }, el("strong", {}, m.user), el("span", { class: "grow" }));
  if (!owner) {
    li.append(lx("span", "tag", () => t("role." + m.role)));
    return li;
  }
  const sel = roleSelect(m.role);
  sel.classList.add("member-role");
  sel.addEventListener("change", () => api("POST", "/api/homes/" + enc(home) + "/members", { user: m.user, role: sel.value })
    .then(afterHomeChange, e => { sel.value = m.role; alertIn(li, e); }));
  const remove = live(el("button", { class: "plain danger small member-remove" }), () => t("members.remove"));
  remove.addEventListener("click", async () => {
    if (!await confirmBox(t("members.confirmRemove", { user: m.user, home: homeName(home) }))) return;
    api("DELETE", "/api/homes/" + enc(home) + "/members/" + enc(m.user)).then(afterHomeChange, e => alertIn(li, e));
  });
  li.append(sel, remove);
  return li;
}

function roleSelect(value) {
  const sel = el("select", { "data-i18n-aria": "members.role", "aria-label": t("members.role") },
    ...ROLES.map(r => live(el("option", { value: r }), () => t("role." + r))));
  sel.value = value;
  return sel;
}
$("memberRole").replaceWith(Object.assign(roleSelect("member"), { id: "memberRole" }));

// afterHomeChange reloads what a change of homes or members may change:
// the homes (and the person's own role), and the devices seen.
function afterHomeChange() {
  $("homeOut").replaceChildren();
  return loadPeople().then(() => loadDevices()).catch(e => alertIn($("homeOut"), e));
}

$("addMember").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const user = $("memberName").value.trim();
  api("POST", "/api/homes/" + enc(chosenHome) + "/members", { user, role: $("memberRole").value })
    .then(() => { $("memberName").value = ""; return afterHomeChange(); }, e => alertIn($("homeOut"), e));
});

$("addDevice").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const code = $("deviceCode").value.trim();
  api("POST", "/api/homes/" + enc(chosenHome) + "/devices", { code }).then(dev => {
    $("deviceCode").value = "";
    afterHomeChange().then(() => $("homeOut").replaceChildren(lx("p", "small device-added", () => t("home.added", { device: dev.name || dev.id }))));
  }, e => alertIn($("homeOut"), e));
});

// leaveButton takes a device out of its home, for the home's owners (the
// admin: into no home); "" for anyone else.
function leaveButton(id, home, out) {
  if (!home || !mayOwn(home)) return "";
  const b = live(el("button", { class: "plain danger leave-home" }), () => t("detail.leaveHome"));
  b.addEventListener("click", async () => {
    if (!await confirmBox(t("detail.confirmLeaveHome", { device: devName(id), home: homeName(home) }))) return;
    try {
      await api("DELETE", "/api/homes/" + enc(home) + "/devices/" + enc(id));
      if (!me.admin) {
        detail = null;
        $("detail").replaceChildren(lx("p", "muted", () => t("detail.leftHome", { home: homeName(home) })));
      }
      afterHomeChange();
    } catch (e) { out.classList.remove("tr"); out.textContent = e.message; }
  });
  return b;
}

$("deleteHome").addEventListener("click", async () => {
  const home = chosenHome;
  if (!await confirmBox(t("home.confirmDelete", { home: homeName(home) }))) return;
  api("DELETE", "/api/homes/" + enc(home)).then(() => {
    chosenHome = "";
    localStorage.setItem("xiaozhi-hub-home", "");
    return afterHomeChange();
  }, e => alertIn($("homeOut"), e));
});

$("leaveHome").addEventListener("click", async () => {
  const home = chosenHome;
  if (!await confirmBox(t("home.confirmLeave", { home: homeName(home) }))) return;
  api("DELETE", "/api/homes/" + enc(home) + "/members/" + enc(me.user)).then(afterHomeChange, e => alertIn($("homeOut"), e));
});

$("newHome").addEventListener("submit", (ev) => {
  ev.preventDefault();
  api("POST", "/api/homes", { name: $("newHomeName").value.trim() }).then(h => {
    $("newHomeName").value = "";
    chosenHome = h.id;
    localStorage.setItem("xiaozhi-hub-home", chosenHome);
    return afterHomeChange();
  }, e => alertIn($("homeBox"), e));
});

// ---- personal tokens (a person's own; the admin has the admin token)

async function loadTokens() {
  const list = (await api("GET", "/api/tokens")).tokens || [];
  $("tokens").replaceChildren(...list.map(tk => {
    const revoke = live(el("button", { class: "plain danger small token-revoke" }), () => t("tokens.revoke"));
    const label = tk.kind === "personal" ? tk.name : t("tokens.login");
    const li = el("li", { class: "small row", "data-token": tk.id, "data-kind": tk.kind }, el("strong", {}, label),
      lx("span", "muted grow", () => [t("tokens.created", { ago: ago(tk.created) }),
        tk.expires && t("tokens.expires", { when: new Date(tk.expires).toLocaleString(locale()) })].filter(Boolean).join(" · ")), revoke);
    revoke.addEventListener("click", async () => {
      if (!await confirmBox(t(tk.kind === "personal" ? "tokens.confirmRevoke" : "tokens.confirmEnd", { name: label }))) return;
      api("DELETE", "/api/tokens/" + enc(tk.id)).then(loadTokens, e => alertIn(li, e));
    });
    return li;
  }));
  if (!list.length) $("tokens").append(lx("li", "muted small", () => t("tokens.none")));
}

$("newToken").addEventListener("submit", (ev) => {
  ev.preventDefault();
  api("POST", "/api/tokens", { name: $("newTokenName").value.trim() }).then(r => {
    $("newTokenName").value = "";
    // The secret is shown this once: the hub keeps only its hash.
    $("tokenSecretText").textContent = r.token;
    $("tokenSecret").hidden = false;
    return loadTokens();
  }, e => alertIn($("tokensBox"), e));
});

$("tokenCopy").addEventListener("click", async () => {
  const text = $("tokenSecretText").textContent;
  try { await navigator.clipboard.writeText(text); } catch {
    getSelection().selectAllChildren($("tokenSecretText")); // copy by hand (http, an older browser)
    return;
  }
  live($("tokenCopy"), () => t("tokens.copied"));
  setTimeout(() => live($("tokenCopy"), () => t("tokens.copy")), 2000);
});

// ---- the admin: users, homes, devices in no home

async function loadAdmin() {
  const users = (await api("GET", "/api/users")).users || [];
  $("users").replaceChildren(...users.map(userRow));
  if (!users.length) $("users").append(lx("li", "muted small", () => t("admin.noUsers")));
  $("allHomes").replaceChildren(...homes.map(h => el("li", { class: "small", "data-home": h.id }, el("strong", {}, h.name), " ",
    lx("span", "muted", () => [t("admin.devices", { n: h.devices }),
      (h.members || []).map(m => m.user + " (" + t("role." + m.role) + ")").join(", ")].filter(Boolean).join(" · ")))));
  if (!homes.length) $("allHomes").append(lx("li", "muted small", () => t("admin.noHomes")));
  renderHomeless();
}

function userRow(u) {
  const pw = el("input", { type: "password", class: "user-password", minlength: 8, maxlength: 1024, autocomplete: "new-password",
    "data-i18n-ph": "admin.newPassword", placeholder: t("admin.newPassword"), "aria-label": t("admin.newPassword") });
  const set = live(el("button", { class: "plain small user-reset" }), () => t("admin.reset"));
  const remove = live(el("button", { class: "plain danger small user-remove" }), () => t("admin.remove"));
  const out = el("span", { class: "small muted" });
  const form = el("form", { class: "row" }, pw, set, out);
  const li = el("li", { class: "act small", "data-user": u.name },
    el("div", { class: "row" }, el("strong", {}, u.name),
      lx("span", "muted grow", () => (u.homes || []).map(h => h.name + (h.role ? " (" + t("role." + h.role) + ")" : "")).join(", ") || t("admin.inNoHome")), remove),
    form);
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    api("PUT", "/api/users/" + enc(u.name) + "/password", { password: pw.value }).then(() => {
      pw.value = "";
      live(out, () => t("admin.passwordSet"));
    }, e => { out.classList.remove("tr"); out.textContent = e.message; });
  });
  remove.addEventListener("click", async () => {
    if (!await confirmBox(t("admin.confirmRemove", { user: u.name }))) return;
    api("DELETE", "/api/users/" + enc(u.name)).then(loadPeople, e => alertIn(li, e));
  });
  return li;
}

$("newUser").addEventListener("submit", (ev) => {
  ev.preventDefault();
  api("POST", "/api/users", { name: $("newUserName").value.trim(), password: $("newUserPassword").value }).then(() => {
    $("newUserName").value = $("newUserPassword").value = "";
    $("adminOut").replaceChildren();
    return loadPeople();
  }, e => alertIn($("adminOut"), e));
});

// renderHomeless lists the devices in no home, each with the homes it can
// be put in.
function renderHomeless() {
  if (!me || !me.admin) return;
  const active = document.activeElement;
  if (active && active.tagName === "SELECT" && $("homeless").contains(active)) return; // a choice being made stays
  const list = [...devices.values()].filter(d => !d.home);
  $("homeless").replaceChildren(...list.map(d => {
    const sel = el("select", { class: "homeless-home", "aria-label": t("admin.putIn") }, ...homes.map(h => el("option", { value: h.id }, h.name)));
    const put = live(el("button", { class: "plain small homeless-put", disabled: !homes.length && "" }), () => t("admin.putIn"));
    const li = el("li", { class: "small row", "data-id": d.id }, el("span", { class: "grow" }, d.name || d.id), sel, put);
    put.addEventListener("click", () => api("POST", "/api/homes/" + enc(sel.value) + "/devices", { device: d.id })
      .then(afterHomeChange, e => alertIn(li, e)));
    return li;
  }));
  if (!list.length) $("homeless").append(lx("li", "muted small", () => t("admin.noHomeless")));
}

// loadPeople reloads the homes and what the person's role shows of them.
async function loadPeople() {
  if (!me) return;
  await loadHomes();
  renderDevices();
  renderHomeless();
  if (me.admin) await loadAdmin();
  else await loadTokens();
}

// ---- start

applyLang();
$("lang").addEventListener("change", () => {
  LANG = $("lang").value;
  localStorage.setItem("xiaozhi-hub-lang", LANG);
  applyLang();
});
$("search").addEventListener("input", renderDevices);
$("roomFilter").addEventListener("change", renderDevices);
$("token").value = token;
$("save").addEventListener("click", async () => {
  token = $("token").value.trim();
  localStorage.setItem("xiaozhi-hub-token", token);
  if (await refresh()) stream();
});
$("token").addEventListener("keydown", (e) => { if (e.key === "Enter") $("save").click(); });
// With no token saved the session cookie, if there is one, answers; else
// the sign-in page shows.
// (A 401 has shown it already; any other failure keeps its message.)
refresh().then(ok => {
  if (ok) stream();
  else if (document.body.dataset.auth === "wait") document.body.dataset.auth = "out";
});
setInterval(() => { // "seen … ago" and expiries stay true; approvals have no events
  if (!me) return;
  tickExpiry();
  if (me.admin) loadActivations();
  loadMCP();
  loadCluster(); // a node that joins or dies sends no event of its own
  followHomes().catch(() => {});
}, 5000);
setInterval(() => { if (me) loadDevices().catch(() => {}); }, 15000);
