// Keeps the page current while it is open: asks the server for the next change (a request
// it holds until the view changes) and swaps <main> for the one it answers. The answer is the
// server's own rendering, escaped there; nothing here builds markup from text.
//
// The updates' URL is built on the page's origin, never on its address: a page opened as
// http://user:key@host/health/page has the credentials in its address, a relative URL would
// carry them, and the browser refuses to fetch a URL that holds credentials. The origin has
// none; the browser sends the credentials it authenticated the page with, as for any request
// to the same origin.
(function () {
  "use strict";
  var origin = window.location.origin;
  var live = function (text) {
    var status = document.getElementById("live");
    if (status) {
      status.textContent = text;
    }
  };
  var poll = function () {
    var main = document.getElementById("page");
    var url = origin + main.getAttribute("data-updates") + "?after=" + encodeURIComponent(main.getAttribute("data-token"));
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
