// Meetings: upload and watch one transcribe, read it beside its audio, rename speakers,
// export, delete, and search what was said in all of them.
"use strict";
const FORMATS = ["txt", "md", "srt", "vtt", "json"];
const $ = (id) => document.getElementById(id);
const shown = { id: null, phrases: [], playback: [], track: null, playing: -1 };
let notice = "";  // said once the list is shown again (after a delete)

function say(text) { $("status").textContent = text; }

function clock(seconds) {
  const s = Math.max(0, Math.floor(seconds));
  const hms = [Math.floor(s / 3600), Math.floor(s / 60) % 60, s % 60];
  return (hms[0] ? hms[0] + ":" : "") + hms.slice(1).map((n) => String(n).padStart(2, "0")).join(":");
}

// ---- the list of meetings, and search across them ----

async function load() {
  const body = document.querySelector("#meetings tbody");
  try {
    const meetings = await (await api("/v1/meetings")).json();
    body.replaceChildren();
    const count = meetings.length ? `${meetings.length} meeting${meetings.length > 1 ? "s" : ""}` : "no meetings yet";
    say(notice ? `${notice}; ${count}` : count);
    notice = "";
    for (const m of meetings) {
      const row = el("tr");
      const link = el("a", "", m.title);
      link.href = `#meeting=${m.id}`;
      row.append(el("td", "", new Date(m.started_at).toLocaleString()), el("td"), el("td", "status-" + m.status, m.status),
                 el("td", "", m.participants.join(", ")), el("td", "", String(m.phrases)), el("td"));
      row.children[1].append(link);
      const open = el("button", "", "Open");
      open.addEventListener("click", () => { location.hash = `meeting=${m.id}`; });
      row.children[5].append(open);
      body.append(row);
    }
  } catch (e) {
    say(e.message);
  }
}

async function search(event) {
  event.preventDefault();
  const q = $("query").value.trim();
  if (!q) return;
  location.hash = "";
  const list = $("found");
  list.replaceChildren();
  $("results").hidden = false;
  try {
    const found = await (await api("/v1/search?" + new URLSearchParams({ q, k: "20" }))).json();
    if (!found.length) list.append(el("li", "empty", `nothing said matches "${q}"`));
    for (const f of found) {
      const item = el("li", "hit");
      const link = el("a", "", `${f.title} · ${clock(f.start)} · ${f.participant}`);
      link.href = `#meeting=${f.meeting_id}&at=${f.position}`;
      item.append(link, el("div", "said", f.text));
      list.append(item);
    }
  } catch (e) {
    list.append(el("li", "error", e.message));
  }
}

// ---- a new meeting: upload, run, watch its progress ----

function addTrackRow() {
  const row = el("tr");
  const file = el("input"); file.type = "file"; file.accept = "audio/*,video/*"; file.className = "track-file";
  const name = el("input"); name.className = "track-name"; name.placeholder = "Ana"; name.maxLength = 200;
  const offset = el("input"); offset.type = "number"; offset.min = "0"; offset.step = "0.1"; offset.value = "0";
  offset.className = "track-offset"; offset.size = 6;
  const remove = el("button", "", "Remove"); remove.type = "button";
  remove.addEventListener("click", () => row.remove());
  for (const node of [file, name, offset, remove]) { const cell = el("td"); cell.append(node); row.append(cell); }
  file.addEventListener("change", () => { if (!name.value && file.files[0]) name.value = file.files[0].name.replace(/\.[^.]+$/, ""); });
  document.querySelector("#track-rows tbody").append(row);
}

function chosenMode() { return document.querySelector("input[name=mode]:checked").value; }

// The meeting to create and the files to upload to it, or an Error saying what is missing.
function planned() {
  const title = $("title").value.trim() || "Untitled meeting";
  if (chosenMode() === "mixed") {
    const file = $("recording").files[0];
    if (!file) throw new Error("choose the recording to upload");
    const names = $("names").value.split(",").map((n) => n.trim()).filter(Boolean);
    const count = $("speakers").value;
    const participant = { name: "recording", speakers: count === "auto" ? "auto" : Number(count), names };
    return { body: { title, participants: [participant] }, files: [["recording", file]] };
  }
  const rows = [...document.querySelectorAll("#track-rows tbody tr")];
  const files = [];
  const participants = [];
  for (const row of rows) {
    const file = row.querySelector(".track-file").files[0];
    const name = row.querySelector(".track-name").value.trim();
    if (!file || !name) throw new Error("give every participant a file and a name");
    participants.push({ name, offset_s: Number(row.querySelector(".track-offset").value || 0) });
    files.push([name, file]);
  }
  if (!files.length) throw new Error("add a participant and their file");
  return { body: { title, participants }, files };
}

// PUT a file, reporting the bytes sent (fetch cannot tell upload progress; XHR can).
function putFile(path, file, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("PUT", path);
    if (token()) xhr.setRequestHeader("Authorization", "Bearer " + token());
    xhr.setRequestHeader("Content-Type", "application/octet-stream");
    xhr.upload.onprogress = (e) => onProgress(e.loaded);
    xhr.onload = () => {
      if (xhr.status < 300) { resolve(JSON.parse(xhr.responseText)); return; }
      let detail = xhr.statusText;
      try { detail = JSON.parse(xhr.responseText).detail || detail; } catch (e) { /* not JSON */ }
      reject(new Error(typeof detail === "string" ? detail : JSON.stringify(detail)));
    };
    xhr.onerror = () => reject(new Error("the upload did not reach the server"));
    xhr.send(file);
  });
}

// Server-sent events of a GET (EventSource cannot send a token): calls onEvent(name, data).
async function events(path, onEvent) {
  const response = await api(path);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let name = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) name = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).trim());
      }
      if (data.length) onEvent(name, JSON.parse(data.join("\n")));
    }
  }
}

// Follow a meeting's run from its events until it is finished, calling show(state) on each;
// the last state.
async function watchRun(id, show) {
  let last = null;
  let idle = true;
  while (idle) {  // a stream that nothing moved for ten minutes ends "idle": follow it again
    idle = false;
    await events(`/v1/meetings/${id}/events`, (name, state) => {
      if (name === "gone") throw new Error(state.detail);
      if (name === "idle") { idle = true; return; }
      last = state;
      show(state);
    });
  }
  return last;
}

// How a run stands, in one line.
function runLine(state) {
  const busy = state.tracks.filter((t) => t.status === "transcribing").map((t) => t.participant);
  return state.finished ? `${state.status}: ${state.phrases} phrases`
    : `transcribing ${busy.join(", ") || "(waiting)"}: ${Math.round(state.fraction * 100)}%`;
}

async function upload(event) {
  event.preventDefault();
  const error = $("upload-error");
  error.hidden = true;
  let plan;
  try { plan = planned(); } catch (e) { error.textContent = e.message; error.hidden = false; return; }
  $("send").disabled = true;
  $("job").hidden = false;
  $("upload-progress").value = 0;
  $("run-progress").value = 0;
  const jobStatus = $("job-status");
  let meeting = null;
  let ran = false;
  try {
    jobStatus.textContent = "creating the meeting";
    meeting = await (await api("/v1/meetings", { method: "POST", headers: { "Content-Type": "application/json" },
                                                   body: JSON.stringify(plan.body) })).json();
    const total = plan.files.reduce((n, [, f]) => n + f.size, 0) || 1;
    let sent = 0;
    for (const [name, file] of plan.files) {
      jobStatus.textContent = `uploading ${file.name}`;
      await putFile(`/v1/meetings/${meeting.id}/tracks/${encodeURIComponent(name)}`, file,
                    (loaded) => { $("upload-progress").value = (sent + loaded) / total; })
        .catch((e) => { throw new Error(`${file.name}: ${e.message.replace(name + ": ", "")}`); });
      sent += file.size;
    }
    $("upload-progress").value = 1;
    const run = await (await api(`/v1/meetings/${meeting.id}/run`, { method: "POST" })).json();
    ran = true;
    jobStatus.textContent = run.started ? "transcribing" : "waiting for a worker to transcribe it";
    const last = await watchRun(meeting.id, (state) => {
      $("run-progress").value = state.fraction;
      jobStatus.textContent = runLine(state);
    });
    const failed = last ? last.tracks.filter((t) => t.error && t.status === "failed") : [];
    if (failed.length) { error.textContent = failed.map((t) => `${t.participant}: ${t.error}`).join("; "); error.hidden = false; }
    await load();
    if (last && last.phrases) location.hash = `meeting=${meeting.id}`;
  } catch (e) {
    error.textContent = e.message;
    error.hidden = false;
    jobStatus.textContent = "stopped";
    if (meeting && !ran) {  // nothing half-made stays: the meeting goes with its failed upload
      await api(`/v1/meetings/${meeting.id}`, { method: "DELETE" }).catch(() => {});
    }
  } finally {
    $("send").disabled = false;
  }
}

// ---- one meeting: its transcript beside its audio ----

function trackOf(participant) {
  return shown.playback.find((t) => t.voices.includes(participant)) || shown.playback[0] || null;
}

function mark(index) {
  if (index === shown.playing) return;
  const items = $("timeline").children;
  if (shown.playing >= 0 && items[shown.playing]) {
    items[shown.playing].classList.remove("playing");
    items[shown.playing].removeAttribute("aria-current");
  }
  shown.playing = index;
  if (index >= 0 && items[index]) {
    items[index].classList.add("playing");
    items[index].setAttribute("aria-current", "true");
  }
}

// Put the player at phrase ``index`` (its track's audio, at its start), and play if asked.
function seek(index, play) {
  const phrase = shown.phrases[index];
  const track = trackOf(phrase.participant);
  if (!track) { say("this meeting keeps no audio"); return; }
  const player = $("player");
  const at = Math.max(0, phrase.start - track.offset_s);
  if (shown.track !== track) {
    shown.track = track;
    player.src = track.url;
  }
  mark(index);
  const go = () => {
    player.currentTime = at;
    if (play) player.play().catch((e) => say(`cannot play: ${e.message}`));
  };
  if (player.readyState >= 1) go(); else player.addEventListener("loadedmetadata", go, { once: true });
}

function follow() {
  const track = shown.track;
  if (!track) return;
  const t = $("player").currentTime + track.offset_s;
  let found = -1;
  shown.phrases.forEach((p, i) => {
    if (track.voices.includes(p.participant) && p.start <= t && t < p.end) found = i;
  });
  if (found >= 0 || !$("player").paused) mark(found);
}

function speakersOf(phrases) {
  const names = [];
  for (const p of phrases) if (!names.includes(p.participant)) names.push(p.participant);
  return names;
}

function renameRow(name, colour) {
  const item = el("li", "speaker");
  const label = el("span", "who " + colour, name);
  const button = el("button", "", "Rename");
  button.setAttribute("aria-label", `Rename ${name}`);
  item.append(label, button);
  button.addEventListener("click", () => {
    const input = el("input"); input.value = name; input.maxLength = 200; input.setAttribute("aria-label", `New name for ${name}`);
    const save = el("button", "", "Save");
    const cancel = el("button", "", "Cancel"); cancel.type = "button";
    const form = el("form", "rename"); form.append(input, save, cancel);
    item.replaceChildren(form);
    input.focus();
    cancel.addEventListener("click", () => item.replaceWith(renameRow(name, colour)));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      try {
        await api(`/v1/meetings/${shown.id}/participants/${encodeURIComponent(name)}`,
                  { method: "PUT", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ name: input.value }) });
        say(`${name} is now ${input.value.trim()}`);
        await openMeeting(shown.id, shown.playing);
      } catch (err) { say(err.message); }
    });
  });
  return item;
}

async function exportMeeting(meeting, fmt) {
  try {
    const text = await (await api(`/v1/meetings/${meeting.id}/export?format=${fmt}`)).text();
    const link = el("a");
    link.href = URL.createObjectURL(new Blob([text], { type: "text/plain" }));
    link.download = `${meeting.title || meeting.id}.${fmt}`;
    link.click();
    say(`exported ${link.download}`);
  } catch (e) { say(e.message); }
}

async function openMeeting(id, at) {
  const [meeting, phrases, playback] = await Promise.all([
    api(`/v1/meetings/${id}`).then((r) => r.json()),
    api(`/v1/meetings/${id}/phrases`).then((r) => r.json()),
    api(`/v1/meetings/${id}/playback`).then((r) => r.json()),
  ]);
  const same = shown.id === id;
  Object.assign(shown, { id, phrases, playback, playing: -1 });
  if (!same) { shown.track = null; $("player").removeAttribute("src"); }
  else shown.track = playback.find((t) => shown.track && t.participant === shown.track.participant) || null;
  $("meeting-title").textContent = meeting.title;
  $("meeting-info").textContent = `${new Date(meeting.started_at).toLocaleString()} · ${meeting.status} · ${phrases.length} phrases`;
  const speakers = speakersOf(phrases);
  const colour = (name) => "v" + (speakers.indexOf(name) % 8);
  $("speaker-list").replaceChildren(...speakers.map((name) => renameRow(name, colour(name))));
  const items = phrases.map((p, i) => {
    const item = el("li", "phrase");
    item.tabIndex = 0;
    item.dataset.index = String(i);
    item.append(el("span", "time", clock(p.start)), el("span", "who " + colour(p.participant), p.participant), el("span", "said", p.text));
    item.addEventListener("click", () => seek(i, true));
    item.addEventListener("keydown", (e) => { if (e.key === "Enter") seek(i, true); });
    return item;
  });
  $("timeline").replaceChildren(...items);
  if (!phrases.length) $("timeline").append(el("li", "empty", EMPTY[meeting.status] || "nothing was heard"));
  offerRun(meeting);
  $("exports").replaceChildren(...FORMATS.map((fmt) => {
    const button = el("button", "", fmt);
    button.addEventListener("click", () => exportMeeting(meeting, fmt));
    return button;
  }));
  $("delete").onclick = async () => {
    if (!confirm(`Delete "${meeting.title}", its audio and its transcript?`)) return;
    try {
      await api(`/v1/meetings/${id}`, { method: "DELETE" });
      notice = `deleted "${meeting.title}"`;
      location.hash = "";
    } catch (e) { say(e.message); }
  };
  if (at !== null && at >= 0 && at < phrases.length) {
    seek(at, false);
    items[at].scrollIntoView({ block: "center" });
  }
}

const EMPTY = {
  pending: "not transcribed yet",
  interrupted: "its run was cut short (the process running it stopped): Run again finishes it",
};

// A meeting whose run was lost (interrupted) or that waits to be run can be run from here:
// every track is uploaded, and none is being transcribed.
function offerRun(meeting) {
  const button = $("run");
  const lost = meeting.status === "interrupted";
  const ready = meeting.tracks.every((t) => t.status === "pending" || t.status === "interrupted");
  button.hidden = !(lost || (meeting.status === "pending" && ready));
  button.textContent = lost ? "Run again" : "Transcribe";
  button.onclick = async () => {
    button.disabled = true;
    try {
      const run = await (await api(`/v1/meetings/${meeting.id}/run`, { method: "POST" })).json();
      if (!run.started) { say("this server transcribes nothing itself: a worker will"); return; }
      button.hidden = true;
      const last = await watchRun(meeting.id, (state) => say(runLine(state)));
      if (shown.id === meeting.id) await openMeeting(meeting.id, null);
      if (last) say(runLine(last));
    } catch (e) { say(e.message); } finally { button.disabled = false; }
  };
}

async function route() {
  const params = new URLSearchParams(location.hash.slice(1));
  const id = params.get("meeting");
  $("home").hidden = Boolean(id);
  $("meeting").hidden = !id;
  if (!id) { $("player").pause(); shown.id = null; await load(); return; }
  try {
    await openMeeting(id, params.has("at") ? Number(params.get("at")) : null);
  } catch (e) { say(e.message); }
}

$("load").addEventListener("click", () => { localStorage.setItem("heard-token", token()); route(); });
$("search").addEventListener("submit", search);
$("upload").addEventListener("submit", upload);
$("add-track").addEventListener("click", addTrackRow);
$("back").addEventListener("click", (e) => { e.preventDefault(); location.hash = ""; });
for (const radio of document.querySelectorAll("input[name=mode]")) {
  radio.addEventListener("change", () => {
    $("mixed").hidden = chosenMode() !== "mixed";
    $("tracks").hidden = chosenMode() !== "tracks";
    if (!document.querySelector("#track-rows tbody tr")) { addTrackRow(); addTrackRow(); }
  });
}
$("player").addEventListener("timeupdate", follow);
window.addEventListener("hashchange", route);
local.then(() => { if (token() || localMode) route(); else say("paste a token (heard users add NAME prints one), or run heard serve --local"); });
