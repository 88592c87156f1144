// Live captions: microphone -> 16 kHz PCM16 -> /v1/live; hypotheses, releases,
// translations and memory context back.
"use strict";
const $ = (id) => document.getElementById(id);
const lines = new Map(); // turn -> {settled, unsettled}
const documents = new Map(); // speaker -> {words, node}: the released caption, unit by unit
let socket = null;
let audio = null;

function status(text) { $("status").textContent = text; }

function lineFor(turn, speaker) {
  let line = lines.get(turn);
  if (!line) {
    const row = el("div", "line");
    row.dataset.turn = turn;
    row.append(el("span", "who", speaker + ":"));
    const settled = el("span", "settled", "");
    const unsettled = el("span", "unsettled", "");
    row.append(settled, " ", unsettled);
    $("captions").append(row);
    line = { settled, unsettled };
    lines.set(turn, line);
  }
  return line;
}

function applyRelease(message) {
  // A unit puts its words at `position` of the speaker's caption, in place of `replaces`
  // words: plain releases append, corrections fix what a final contradicted.
  let doc = documents.get(message.speaker);
  if (!doc) {
    const row = el("div", "line");
    row.append(el("span", "who", message.speaker + ":"));
    const node = el("span", "released", "");
    row.append(" ", node);
    $("released").append(row);
    doc = { words: [], node };
    documents.set(message.speaker, doc);
  }
  const words = message.text ? message.text.split(" ") : [];
  doc.words.splice(message.position, message.replaces, ...words);
  doc.node.textContent = doc.words.join(" ");
}

function showContext(message) {
  const box = $("memory");
  box.replaceChildren();
  box.append(el("p", "note", `for ${message.turn} (${message.source}, ready ${message.ready_after_final_ms} ms after the final)`));
  for (const slug of message.pages) box.append(el("div", "item page", "page: " + slug));
  for (const item of message.evidence.slice(0, 8)) {
    box.append(el("div", "item", `${item.speaker || "someone"}: ${item.text}`));
  }
  if (!message.pages.length && !message.evidence.length) box.append(el("p", "empty", "nothing recalled"));
}

function onMessage(event) {
  const message = JSON.parse(event.data);
  if (message.type === "hypothesis") {
    const line = lineFor(message.turn, message.speaker);
    line.settled.textContent = message.stable;
    line.unsettled.textContent = message.unstable;
  } else if (message.type === "final") {
    const line = lineFor(message.turn, message.speaker);
    line.settled.textContent = message.text;
    line.unsettled.textContent = "";
  } else if (message.type === "release") {
    applyRelease(message);
  } else if (message.type === "translation") {
    const row = el("div", "tr");
    row.append(el("span", "src", message.text), el("span", "", message.translation ?? "(failed: " + message.error + ")"));
    $("translations").append(row);
    if (message.translator.startsWith("identity") && !$("translations").querySelector(".note")) {
      $("translations").prepend(el("p", "note", "No translator is configured on the server ($HEARD_LLM_PROVIDER): the text is shown as is."));
    }
  } else if (message.type === "context") {
    showContext(message);
  } else if (message.type === "degraded") {
    status(`compute is behind (x${message.rtf}): decoding every ${message.chunk_ms} ms`);
  }
}

async function startMicrophone() {
  const stream = await navigator.mediaDevices.getUserMedia({ audio: { channelCount: 1, echoCancellation: true } });
  const context = new AudioContext({ sampleRate: 16000 });
  const worklet = `
    class Tap extends AudioWorkletProcessor {
      process(inputs) { if (inputs[0][0]) this.port.postMessage(inputs[0][0].slice()); return true; }
    }
    registerProcessor("heard-tap", Tap);`;
  await context.audioWorklet.addModule(URL.createObjectURL(new Blob([worklet], { type: "application/javascript" })));
  const source = context.createMediaStreamSource(stream);
  const tap = new AudioWorkletNode(context, "heard-tap");
  let pending = [];
  let count = 0;
  tap.port.onmessage = (e) => {
    pending.push(e.data);
    count += e.data.length;
    if (count >= 1600 && socket && socket.readyState === WebSocket.OPEN) { // 100 ms
      const pcm = new Int16Array(count);
      let at = 0;
      for (const block of pending) {
        for (let i = 0; i < block.length; i++) pcm[at++] = Math.max(-1, Math.min(1, block[i])) * 32767;
      }
      socket.send(pcm.buffer);
      pending = [];
      count = 0;
    }
  };
  source.connect(tap);
  return { stream, context };
}

$("start").addEventListener("click", async () => {
  await local;
  if (!token() && !localMode) { status("paste a token first (heard users add NAME prints one)"); return; }
  localStorage.setItem("heard-token", token());
  const params = new URLSearchParams({ mode: $("mode").value, speaker: $("speaker").value || "you" });
  if (token()) params.set("token", token());
  if ($("target").value.trim()) params.set("translate", $("target").value.trim());
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  socket = new WebSocket(`${scheme}://${location.host}/v1/live?${params}`);
  socket.binaryType = "arraybuffer";
  socket.onmessage = onMessage;
  socket.onclose = (e) => status(e.code === 1000 || e.code === 1005 ? "stopped" : `closed (${e.code}: ${e.reason || "no reason"})`);
  socket.onopen = async () => {
    try {
      audio = await startMicrophone();
      status("listening");
      $("start").disabled = true;
      $("stop").disabled = false;
    } catch (e) {
      status("microphone unavailable: " + e.message);
      socket.close();
    }
  };
});

$("stop").addEventListener("click", () => {
  if (audio) { audio.stream.getTracks().forEach((t) => t.stop()); audio.context.close(); audio = null; }
  if (socket && socket.readyState === WebSocket.OPEN) { socket.send(JSON.stringify({ type: "end" })); setTimeout(() => socket.close(), 3000); }
  $("start").disabled = false;
  $("stop").disabled = true;
});
