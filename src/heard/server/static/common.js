// Shared by heard's pages: the token (kept in this browser only) and authorized fetches.
"use strict";
const tokenInput = document.getElementById("token");
tokenInput.value = localStorage.getItem("heard-token") || "";
tokenInput.addEventListener("change", () => localStorage.setItem("heard-token", tokenInput.value.trim()));

function token() { return tokenInput.value.trim(); }

async function api(path, options = {}) {
  const response = await fetch(path, {
    ...options,
    headers: { ...(options.headers || {}), Authorization: "Bearer " + token() },
  });
  if (!response.ok) {
    let detail = response.statusText;
    try { detail = (await response.json()).detail || detail; } catch (e) { /* not JSON */ }
    throw new Error(response.status + " " + (typeof detail === "string" ? detail : JSON.stringify(detail)));
  }
  return response;
}

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}
