"use strict";
// The hub's live settings (the admin's: the agent's model, recognition,
// synthesis, the conversation timeout; keys are write-only) and, in a
// device's detail, the assistant's persona and memory there. Uses el, api,
// live, lx and t from the other scripts, at run time.
Object.assign(MESSAGES.en, {
  "settings.title": "Settings",
  "settings.help": "Applied from the next spoken turn, without a restart. A value fixed by a flag is changed where the hub is started.",
  "settings.agent": "Agent (the model)", "settings.asr": "Speech recognition", "settings.tts": "Speech synthesis", "settings.voice": "Conversations",
  "settings.save": "Save", "settings.saved": "saved: used from the next turn",
  "settings.test": "Test", "settings.testing": "testing…", "settings.ok": "works",
  "settings.keySet": "set {ago} — type to replace", "settings.keyUnset": "not set",
  "settings.clear": "use the file's value",
  "settings.homeTitle": "This home's own model and voices", "settings.clearHome": "use the hub's",
  "settings.homeHelp": "For this home's devices, with your own keys. What you leave empty is the hub's. An address of your own must be on the internet; the hub's keys are never sent to a provider or address you choose.",
  "source.home": "this home's", "source.hub": "the hub's",
  "source.default": "default", "source.file": "config file", "source.env": "environment", "source.stored": "set here", "source.flag": "fixed by a flag",
  "problem.wrong key": "wrong key", "problem.unreachable": "unreachable", "problem.unknown model": "unknown model",
  "problem.wrong address": "wrong address", "problem.not configured": "not configured", "problem.invalid settings": "invalid settings", "problem.failed": "failed",
  "persona.title": "Assistant on this device", "persona.homeTitle": "The assistant in this home",
  "persona.name": "name", "persona.role": "role (who it is, what it does)", "persona.language": "language (zh, en)",
  "persona.voice": "voice", "persona.greeting": "greeting",
  "persona.save": "Save persona", "persona.saved": "saved: used from the next turn",
  "persona.inherits": "Empty fields use the home's, then the defaults (shown greyed).",
  "persona.homeInherits": "Every device of the home uses these, unless it has its own; empty fields use the defaults (shown greyed).",
  "memory.title": "What it remembers", "memory.none": "Nothing yet: it writes a short note after each conversation.",
  "memory.clear": "Forget", "memory.cleared": "forgotten", "memory.confirm": "Forget what the assistant remembers of {device}'s conversations?",
});
Object.assign(MESSAGES.zh, {
  "settings.title": "设置",
  "settings.help": "从下一轮对话起生效，无需重启。由启动参数固定的值需在启动 hub 时修改。",
  "settings.agent": "智能体（模型）", "settings.asr": "语音识别", "settings.tts": "语音合成", "settings.voice": "对话",
  "settings.save": "保存", "settings.saved": "已保存：下一轮对话起生效",
  "settings.test": "测试", "settings.testing": "测试中…", "settings.ok": "正常",
  "settings.keySet": "已设置（{ago}）— 输入新值以替换", "settings.keyUnset": "未设置",
  "settings.clear": "恢复配置文件的值",
  "settings.homeTitle": "本家庭自己的模型和声音", "settings.clearHome": "改用 hub 的设置",
  "settings.homeHelp": "用于本家庭的设备，使用你自己的密钥。留空的项使用 hub 的设置。自定义的地址必须在互联网上；hub 的密钥绝不会发往你选择的服务商或地址。",
  "source.home": "本家庭", "source.hub": "hub",
  "source.default": "默认", "source.file": "配置文件", "source.env": "环境变量", "source.stored": "在此设置", "source.flag": "由启动参数固定",
  "problem.wrong key": "密钥错误", "problem.unreachable": "无法连接", "problem.unknown model": "模型不存在",
  "problem.wrong address": "地址错误", "problem.not configured": "未配置", "problem.invalid settings": "设置无效", "problem.failed": "失败",
  "persona.title": "这台设备上的助手", "persona.homeTitle": "这个家里的助手",
  "persona.name": "名字", "persona.role": "角色（它是谁、做什么）", "persona.language": "语言（zh、en）",
  "persona.voice": "音色", "persona.greeting": "问候语",
  "persona.save": "保存角色", "persona.saved": "已保存：下一轮对话起生效",
  "persona.inherits": "留空的项使用家庭的设置，再用默认值（灰色显示）。",
  "persona.homeInherits": "家里的每台设备都使用这些设置，除非设备有自己的；留空的项使用默认值（灰色显示）。",
  "memory.title": "它记得的事", "memory.none": "还没有：每次对话后它会写下简短的记录。",
  "memory.clear": "忘记", "memory.cleared": "已忘记", "memory.confirm": "忘记助手记得的关于 {device} 的对话内容？",
});

// The live settings, by group, as GET /api/settings names them.
const SETTING_GROUPS = [
  ["agent", ["agent-provider", "agent-model", "agent-base-url", "agent-api-key"]],
  ["asr", ["asr-provider", "asr-model", "asr-language", "asr-audio", "asr-base-url", "asr-api-key"]],
  ["tts", ["tts-provider", "tts-model", "tts-voice", "tts-base-url", "tts-api-key"]],
  ["voice", ["conversation-timeout"]],
];
// say shows an outcome in out: a translated key, or a server's message.
function say(out, key, args) {
  if (key instanceof Error) { out._tr = null; out.classList.remove("tr"); out.textContent = key.message; return; }
  live(out, () => t(key, args));
}

// settingsForm edits the settings at path (/api/settings, the hub's, or a
// home's own /api/homes/{id}/settings) in groups; each value shows its
// source, a stored one is removable (clearWhat says what applies then),
// and keys show only as set. It returns the form; form.show(view) fills it.
function settingsForm(path, groups, clearWhat, prefix) {
  const inputs = new Map(); // name → {input, source, clear}
  const form = el("form", { class: "settings-form", autocomplete: "off" });
  const saved = el("span", { class: "small settings-out" });
  const dirty = (names) => {
    const out = {};
    for (const n of names) {
      const s = inputs.get(n);
      if (s && s.input.dataset.dirty) out[n] = s.input.value.trim();
    }
    return out;
  };
  const show = (all) => {
    for (const [name, s] of inputs) {
      const v = all[name];
      if (!v) continue;
      live(s.source, () => t("source." + v.source));
      s.source.dataset.source = v.source;
      s.input.disabled = v.source === "flag";
      s.clear.hidden = v.source !== "stored" && v.source !== "home";
      if (s.input.type === "password" || v.value === undefined) { // a key, or the hub's address shown to a home
        s.input.placeholder = v.set ? t("settings.keySet", { ago: ago(v.updated || "") }) : t("settings.keyUnset");
      } else {
        setIfIdle(s.input, v.value || "");
      }
    }
  };
  const save = async (changes) => {
    try {
      const r = await api("PUT", path, changes);
      for (const n of Object.keys(changes)) delete inputs.get(n).input.dataset.dirty;
      show(r.settings);
      say(saved, "settings.saved");
    } catch (e) { say(saved, e); }
  };
  for (const [group, names] of groups) {
    const fs = el("fieldset", { class: "settings-group", "data-group": group },
      lx("legend", "", () => t("settings." + group)));
    for (const name of names) {
      const key = name.endsWith("-api-key");
      const input = el("input", { type: key ? "password" : "text", id: prefix + name, name, autocomplete: key ? "new-password" : "off", maxlength: "2048", spellcheck: "false", autocapitalize: "none" });
      input.addEventListener("input", () => { input.dataset.dirty = "1"; });
      const source = el("span", { class: "tag source" });
      const clear = el("button", { type: "button", class: "plain small clear", hidden: "" });
      live(clear, () => t(clearWhat));
      clear.addEventListener("click", () => save({ [name]: null }));
      fs.append(el("label", { class: "field setting" }, el("span", { class: "row" }, el("code", {}, name), source, clear), input));
      inputs.set(name, { input, source, clear });
    }
    if (group !== "voice") {
      const out = el("span", { class: "small test-out", "data-what": group });
      const test = el("button", { type: "button", class: "plain small test", "data-what": group });
      live(test, () => t("settings.test"));
      test.addEventListener("click", async () => {
        say(out, "settings.testing");
        out.className = "small test-out";
        try {
          const r = await api("POST", path + "/test", { what: group, settings: dirty(names) });
          out.dataset.problem = r.problem || "";
          out.className = "small test-out " + (r.ok ? "good" : "bad");
          live(out, () => r.ok ? t("settings.ok") : t("problem." + r.problem) + (r.detail ? ": " + r.detail : ""));
        } catch (e) { say(out, e); }
      });
      fs.append(el("div", { class: "row" }, test, out));
    }
    form.append(fs);
  }
  form.append(el("div", { class: "row end" }, lx("button", "", () => t("settings.save")), saved));
  form.addEventListener("submit", (ev) => { ev.preventDefault(); save(dirty([...inputs.keys()])); });
  form.show = show;
  return form;
}

// loadSettings shows the hub's settings to the admin (only the admin may
// read them).
let hubSettings = null;
async function loadSettings() {
  const admin = !!(me && me.admin);
  $("settingsBox").hidden = !admin;
  if (!admin) return;
  if (!hubSettings) {
    hubSettings = settingsForm("/api/settings", SETTING_GROUPS, "settings.clear", "set-");
    hubSettings.id = "settingsForm";
    hubSettings.querySelector(".settings-out").id = "settingsOut";
    $("settingsForm").replaceWith(hubSettings);
  }
  hubSettings.show((await api("GET", "/api/settings")).settings);
}

// homeSettings is a home's own model and voices, for its owners; what the
// home does not set is the hub's.
function homeSettings(id) {
  const form = settingsForm("/api/homes/" + enc(id) + "/settings", SETTING_GROUPS.filter(([g]) => g !== "voice"), "settings.clearHome", "home-set-");
  form.id = "homeSettingsForm";
  const box = el("details", { class: "home-settings" }, lx("summary", "", () => t("settings.homeTitle")),
    lx("p", "muted small", () => t("settings.homeHelp")), form);
  api("GET", "/api/homes/" + enc(id) + "/settings").then(v => form.show(v.settings)).catch(e => say(form.querySelector(".settings-out"), e));
  return box;
}

// personaForm edits the persona at path (a device's or a home's).
function personaForm(path, hint) {
  const fields = {};
  const form = el("form", { class: "persona" });
  for (const f of ["name", "role", "language", "voice", "greeting"]) {
    const i = el(f === "role" ? "textarea" : "input", { name: f, class: "persona-" + f, maxlength: f === "role" ? "4000" : "500", rows: f === "role" ? "3" : undefined });
    i.addEventListener("input", () => { i.dataset.dirty = "1"; });
    fields[f] = i;
    form.append(el("label", { class: "field" }, lx("span", "small muted", () => t("persona." + f)), i));
  }
  const out = el("span", { class: "small persona-out" });
  form.append(lx("p", "muted small", () => t(hint)),
    el("div", { class: "row" }, lx("button", "plain", () => t("persona.save")), out));
  const show = (v) => {
    for (const [f, i] of Object.entries(fields)) {
      setIfIdle(i, (v.persona || {})[f] || "");
      i.placeholder = (v.effective || {})[f] || "";
    }
  };
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const body = {};
    for (const [f, i] of Object.entries(fields)) body[f] = i.value.trim();
    try {
      const v = await api("PUT", path + "/persona", body);
      for (const i of Object.values(fields)) delete i.dataset.dirty;
      show(v);
      say(out, "persona.saved");
    } catch (e) { say(out, e); }
  });
  api("GET", path + "/persona").then(show).catch(e => say(out, e));
  return form;
}

// homePersona shows the persona a home's devices inherit, to its owners
// and members; kept while the same home stays chosen.
function homePersona(id, manage) {
  const box = $("homePersona");
  if (box.dataset.home === id && box.dataset.manage === String(manage)) return;
  box.dataset.home = id;
  box.dataset.manage = String(manage);
  box.replaceChildren(...(manage ? [lx("h3", "", () => t("persona.homeTitle")), personaForm("/api/homes/" + enc(id), "persona.homeInherits")] : []),
    ...(mayOwn(id) ? [homeSettings(id)] : []));
}

// assistantPanel is the persona and memory of a device, in its detail,
// for the owners and members of its home (and the admin).
function assistantPanel(id, manage) {
  const box = el("div", { class: "assistant", hidden: !manage && "" });
  if (!manage) return box;
  const path = "/api/devices/" + enc(id);
  const memory = el("p", { class: "memory-text small" });
  const memOut = el("span", { class: "small memory-out" });
  const forget = lx("button", "plain danger small forget", () => t("memory.clear"));
  const showMemory = (m) => {
    if (m.text) { memory._tr = null; memory.classList.remove("tr", "muted"); memory.textContent = m.text; }
    else { memory.classList.add("muted"); live(memory, () => t("memory.none")); }
  };
  forget.addEventListener("click", async () => {
    if (!await confirmBox(t("memory.confirm", { device: devName(id) }))) return;
    try { await api("DELETE", path + "/memory"); showMemory({}); say(memOut, "memory.cleared"); }
    catch (e) { say(memOut, e); }
  });
  box.append(lx("h3", "", () => t("persona.title")), personaForm(path, "persona.inherits"),
    lx("h3", "", () => t("memory.title")), memory, el("div", { class: "row" }, forget, memOut));
  api("GET", path + "/memory").then(showMemory).catch(e => say(memOut, e));
  return box;
}
