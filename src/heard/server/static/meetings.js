// Meetings: list the user's meetings; export a transcript in any format.
"use strict";
const FORMATS = ["txt", "md", "srt", "vtt", "json"];

async function load() {
  const status = document.getElementById("status");
  const body = document.querySelector("#meetings tbody");
  body.replaceChildren();
  try {
    const meetings = await (await api("/v1/meetings")).json();
    status.textContent = meetings.length ? `${meetings.length} meetings` : "no meetings yet";
    for (const m of meetings) {
      const row = el("tr");
      row.append(el("td", "", new Date(m.started_at).toLocaleString()), el("td", "", m.title),
                 el("td", "", m.status), el("td", "", m.participants.join(", ")), el("td", "", String(m.phrases)));
      const cell = el("td");
      for (const fmt of FORMATS) {
        const button = el("button", "", fmt);
        button.dataset.meeting = m.id;
        button.addEventListener("click", () => exportMeeting(m, fmt));
        cell.append(button, " ");
      }
      row.append(cell);
      body.append(row);
    }
  } catch (e) {
    status.textContent = e.message;
  }
}

async function exportMeeting(meeting, fmt) {
  const text = await (await api(`/v1/meetings/${meeting.id}/export?format=${fmt}`)).text();
  document.getElementById("transcript").textContent = text;
  const link = el("a");
  link.href = URL.createObjectURL(new Blob([text], { type: "text/plain" }));
  link.download = `${meeting.title || meeting.id}.${fmt}`;
  link.click();
}

document.getElementById("load").addEventListener("click", () => { localStorage.setItem("heard-token", token()); load(); });
if (token()) load();
