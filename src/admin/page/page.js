// Keeps the page current while it is open: asks the server for the next change (a request
// it holds until the view changes) and swaps <main> for the one it answers. The answer is the
// server's own rendering, escaped there; nothing here builds markup from text.
(function () {
  "use strict";
  var live = function (text) {
    var status = document.getElementById("live");
    if (status) {
      status.textContent = text;
    }
  };
  var poll = function () {
    var main = document.getElementById("page");
    var url = main.getAttribute("data-updates") + "?after=" + encodeURIComponent(main.getAttribute("data-token"));
    fetch(url, { credentials: "same-origin", cache: "no-store" })
      .then(function (response) {
        if (response.status === 204) {
          return null;
        }
        if (!response.ok) {
          throw new Error("HTTP " + response.status);
        }
        return response.text();
      })
      .then(function (html) {
        if (html !== null) {
          var next = new DOMParser().parseFromString(html, "text/html").getElementById("page");
          if (next) {
            document.getElementById("page").replaceWith(document.adoptNode(next));
          }
        }
        live("following changes");
        poll();
      })
      .catch(function () {
        live("reconnecting…");
        setTimeout(poll, 2000);
      });
  };
  live("following changes");
  poll();
})();
