// Shared by heard's pages: the token (kept in this browser only), local mode, authorized fetches.
"use strict";
const tokenInput = document.getElementById("token");
tokenInput.value = localStorage.getItem("heard-token") || "";
tokenInput.addEventListener("change", () => localStorage.setItem("heard-token", tokenInput.value.trim()));

function token() { return tokenInput.value.trim(); }

// `heard serve --local`: this machine's browser is the local user and needs no token.
let localMode = false;
const local = fetch("/v1/me").then((r) => {
  if (r.ok) {
    localMode = true;
    tokenInput.value = "";  // a token saved here before would make the page that user's
    tokenInput.closest("label").hidden = true;
    document.body.classList.add("local");
  }
}).catch(() => {});

async function api(path, options = {}) {
  const headers = { ...(options.headers || {}) };
  if (token()) headers.Authorization = "Bearer " + token();
  const response = await fetch(path, { ...options, headers });
  if (!response.ok) throw new Error(await problem(response));
  return response;
}

// What a refused request says, as one line.
async function problem(response) {
  let detail = response.statusText;
  try { detail = (await response.json()).detail || detail; } catch (e) { /* not JSON */ }
  return response.status + " " + (typeof detail === "string" ? detail : JSON.stringify(detail));
}

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}
