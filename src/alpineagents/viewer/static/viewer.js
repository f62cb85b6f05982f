// Live update of a run page: every two seconds, fetch the entries saved after the ones shown and add them; and
// fetch a request's full input when it is opened.
// The server renders (and escapes) the HTML; this script only places it.
(function () {
  "use strict";
  // A request's full input is fetched when its details open the first time (a long run would otherwise send every
  // request's messages with the page). The server renders and escapes it.
  document.addEventListener("toggle", function (event) {
    var details = event.target;
    if (!details.open || !details.matches || !details.matches("details.request-input[data-src]")) { return; }
    var body = details.querySelector(".input-body");
    if (body.getAttribute("data-loaded")) { return; }
    body.setAttribute("data-loaded", "1");
    body.textContent = "loading…";
    fetch(details.getAttribute("data-src"), { cache: "no-store" })
      .then(function (response) { return response.ok ? response.text() : Promise.reject(response.status); })
      .then(function (html) { body.innerHTML = html; })
      .catch(function () { body.textContent = "the input could not be loaded (is the viewer still running?)"; body.removeAttribute("data-loaded"); });
  }, true);

  var page = document.querySelector("main.run[data-live]");
  if (!page) { return; }
  var timeline = page.querySelector("ol.timeline");
  var head = page.querySelector("section.head");
  var charts = page.querySelector("section.charts");
  var busy = false;

  function poll() {
    if (busy) { return; }
    busy = true;
    var count = page.getAttribute("data-count");
    fetch(page.getAttribute("data-live") + "?after=" + encodeURIComponent(count), { cache: "no-store" })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (data) {
        if (data && data.count > Number(count)) {
          timeline.insertAdjacentHTML("beforeend", data.items);
          head.innerHTML = data.header;
          charts.innerHTML = data.charts;
          page.setAttribute("data-count", String(data.count));
          page.querySelector(".entry-count").textContent = String(data.count);
        }
      })
      .catch(function () { /* the viewer stopped; try again on the next tick */ })
      .then(function () { busy = false; });
  }

  window.setInterval(poll, 2000);
})();
