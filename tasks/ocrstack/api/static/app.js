// ocrstack web page: one job per file (POST /v1/jobs), progress from GET /v1/jobs/{id}, then the
// Markdown beside each page image with the layout boxes drawn over it, and download links.
// Every request carries the API key from the form (header X-API-Key), so images and downloads
// are fetched as blobs instead of plain links. The job list comes from the service
// (GET /v1/jobs, newest first, "More" follows next_cursor), so it survives reloads and shows the
// jobs of every browser; each job has a Cancel (queued, running) or Delete (finished) button
// that sends DELETE /v1/jobs/{id}: a running job stops before its next page.
"use strict";
(function () {
  const $ = (sel, root = document) => root.querySelector(sel);
  const md = window.ocrstackMarkdown;
  const keyInput = $("#apikey");
  keyInput.value = sessionStorage.getItem("ocrstack-api-key") || "";

  function headers() {
    const key = keyInput.value.trim();
    sessionStorage.setItem("ocrstack-api-key", key);
    return key ? { "X-API-Key": key } : {};
  }

  async function call(url, options = {}) {
    const res = await fetch(url, { ...options, headers: { ...headers(), ...(options.headers || {}) } });
    if (!res.ok) {
      let msg = `${res.status} ${res.statusText}`;
      try { const body = await res.json(); msg = body.error + (body.fix ? ` -- fix: ${body.fix}` : ""); } catch (e) { /* not JSON */ }
      throw new Error(msg);
    }
    return res;
  }

  function showError(text) {
    const el = $("#error");
    el.textContent = text;
    el.hidden = !text;
  }

  const PAGE = 20; // jobs per GET /v1/jobs call
  let nextCursor = null;
  function newCard(filename, atEnd = false) {
    const card = $("#job-template").content.firstElementChild.cloneNode(true);
    $(".job-title", card).textContent = filename;
    if (atEnd) $("#jobs").append(card); else $("#jobs").prepend(card);
    $(".stop", card).addEventListener("click", () => stop(card).catch((err) => showError(err.message)));
    return card;
  }

  // DELETE /v1/jobs/{id}: cancels a queued or running job (the card then shows "cancelled"),
  // deletes a finished one with its files (the card goes).
  async function stop(card) {
    const id = card.dataset.jobId;
    if (!id) return;
    const body = await (await call(`/v1/jobs/${encodeURIComponent(id)}`, { method: "DELETE" })).json();
    if (body.status === "deleted") card.remove();
    else $(".stop", card).disabled = true;
  }

  function fail(card, message) {
    const text = $(".status-text", card);
    text.textContent = message;
    text.setAttribute("role", "alert");
    card.classList.add("failed");
  }

  async function submitFile(file) {
    const card = newCard(file.name);
    const form = new FormData();
    form.append("file", file, file.name);
    const pages = $("#pages").value.trim();
    const dpi = $("#dpi").value.trim();
    if (pages) form.append("pages", pages);
    if (dpi) form.append("dpi", dpi);
    try {
      const job = await (await call("/v1/jobs", { method: "POST", body: form })).json();
      card.dataset.jobId = job.id;
      await follow(job, card);
    } catch (err) {
      fail(card, err.message);
    }
  }

  // The service's jobs, newest first, one page at a time (GET /v1/jobs; "More" asks for the
  // next page with its cursor). Each is followed until it ends, finished ones are shown.
  async function loadJobs(cursor) {
    const query = new URLSearchParams({ limit: String(PAGE) });
    if (cursor) query.set("cursor", cursor);
    try {
      const page = await (await call(`/v1/jobs?${query}`)).json();
      for (const job of page.jobs) {
        if (document.querySelector(`.job[data-job-id="${job.id}"]`)) continue;
        const card = newCard(job.filename, true);
        card.dataset.jobId = job.id;
        follow(job, card).catch((err) => fail(card, err.message));
      }
      nextCursor = page.next_cursor;
      $("#more").hidden = !nextCursor;
    } catch (err) {
      showError(`the job list could not be loaded: ${err.message}`);
    }
  }

  async function follow(job, card) {
    const bar = $("progress", card);
    const text = $(".status-text", card);
    for (;;) {
      bar.max = Math.max(job.pages_total, 1);
      bar.value = job.pages_done;
      const where = job.status === "queued" ? `, ${job.position} ahead in the queue` : "";
      text.textContent = `${job.status}: ${job.pages_done}/${job.pages_total} page(s)${where}`;
      card.dataset.status = job.status;
      const active = ["queued", "running"].includes(job.status);
      $(".stop", card).hidden = false;
      $(".stop", card).textContent = active ? "Cancel" : "Delete";
      $(".stop", card).title = active ? "stop this job (a running one before its next page)" : "delete this job and its files";
      if (["done", "partial"].includes(job.status)) return showResult(job, card);
      if (["failed", "cancelled"].includes(job.status)) {
        return fail(card, `${job.status}: ${job.error || ""}${job.fix ? " -- fix: " + job.fix : ""}`);
      }
      await new Promise((r) => setTimeout(r, 500));
      job = await (await call(job.status_url)).json();
    }
  }

  function downloadLink(nav, label, url, filename) {
    const a = document.createElement("a");
    a.href = "#";
    a.textContent = label;
    a.addEventListener("click", async (ev) => {
      ev.preventDefault();
      const blob = await (await call(url)).blob();
      const tmp = document.createElement("a");
      tmp.href = URL.createObjectURL(blob);
      tmp.download = filename;
      tmp.click();
      setTimeout(() => URL.revokeObjectURL(tmp.href), 10000);
    });
    nav.append(a);
  }

  async function showResult(job, card) {
    const [markdown, blocks] = await Promise.all([
      call(`${job.result_url}?format=markdown`).then((r) => r.text()),
      call(`${job.result_url}?format=json`).then((r) => r.json()),
    ]);
    const stem = job.filename.replace(/\.[^.]*$/, "") || "document";
    const nav = $(".downloads", card);
    downloadLink(nav, "Markdown", `${job.result_url}?format=markdown`, `${stem}.md`);
    downloadLink(nav, "Blocks JSON", `${job.result_url}?format=json`, `${stem}.blocks.json`);
    downloadLink(nav, "Zip with figures", `${job.result_url}?format=zip`, `${stem}.zip`);
    nav.hidden = false;
    $(".markdown", card).innerHTML = md.render(markdown);
    $(".result", card).hidden = false;
    const pagesEl = $(".pages", card);
    for (const page of blocks.pages) {
      const wrap = document.createElement("div");
      wrap.className = "page";
      const img = document.createElement("img");
      img.alt = `page ${page.page}`;
      wrap.append(img);
      const [w, h] = page.size;
      for (const b of page.blocks || []) {
        const [x0, y0, x1, y1] = b.bbox;
        const box = document.createElement("div");
        box.className = `box ${b.category}`;
        Object.assign(box.style, {
          left: `${(100 * x0) / w}%`, top: `${(100 * y0) / h}%`,
          width: `${(100 * (x1 - x0)) / w}%`, height: `${(100 * (y1 - y0)) / h}%`,
        });
        const tag = document.createElement("span");
        tag.textContent = `${b.order} ${b.category}`;
        box.append(tag);
        wrap.append(box);
      }
      pagesEl.append(wrap);
      call(`/v1/jobs/${job.id}/pages/${page.page}/image`)
        .then((r) => r.blob())
        .then((blob) => { img.src = URL.createObjectURL(blob); })
        .catch((err) => { img.alt = `page ${page.page}: ${err.message}`; });
    }
    card.dataset.rendered = "true";
  }

  $("#upload").addEventListener("submit", (ev) => {
    ev.preventDefault();
    showError("");
    const files = Array.from($("#files").files);
    if (!files.length) return showError("choose at least one file");
    files.forEach(submitFile);
  });

  $("#more").addEventListener("click", () => loadJobs(nextCursor));
  $("#apikey").addEventListener("change", () => { showError(""); $("#jobs").replaceChildren(); loadJobs(); });

  loadJobs();
})();
