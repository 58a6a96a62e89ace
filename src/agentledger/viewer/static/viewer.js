// agentledger viewer: keyboard shortcuts and the walk through highlighted evidence.
// Served as a file (the Content-Security-Policy allows no inline script); it never builds
// HTML from text, so agent text stays the escaped text the server rendered.
"use strict";

(function () {
  function typing(event) {
    var target = event.target;
    if (!target || !target.tagName) return false;
    var tag = target.tagName.toLowerCase();
    return tag === "input" || tag === "textarea" || tag === "select" || target.isContentEditable;
  }

  function toggleHelp() {
    var help = document.getElementById("shortcuts");
    if (help) help.hidden = !help.hidden;
  }

  var hits = [];
  var current = -1;

  function showHit(step) {
    if (!hits.length) return;
    if (current >= 0) hits[current].classList.remove("current");
    current = (current + step + hits.length) % hits.length;
    var hit = hits[current];
    hit.classList.add("current");
    var details = hit.closest("details");
    if (details) details.open = true;
    hit.scrollIntoView({ block: "center" });
  }

  function chooseVerdict(value) {
    var input = document.querySelector('form.label input[name="verdict"][value="' + value + '"]');
    if (input) {
      input.checked = true;
      input.focus();
    }
  }

  function openAnchor() {
    if (!window.location.hash) return;
    var target = document.getElementById(window.location.hash.slice(1));
    var folded = target && (target.tagName.toLowerCase() === "details" ? target : target.closest("details"));
    if (folded) folded.open = true;
  }

  function follow(id) {
    var link = document.getElementById(id);
    if (link && link.href) window.location.assign(link.href);
  }

  document.addEventListener("DOMContentLoaded", function () {
    hits = Array.prototype.slice.call(document.querySelectorAll(".hit"));
    var toggles = document.querySelectorAll("[data-help]");
    for (var i = 0; i < toggles.length; i++) toggles[i].addEventListener("click", toggleHelp);
    var form = document.querySelector("form.label");
    if (form) {
      form.addEventListener("keydown", function (event) {
        if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
          event.preventDefault();
          form.requestSubmit();
        }
      });
    }
    // An anchor in the address (a firing's evidence) opens the folded section it sits in.
    openAnchor();
  });

  // ... and so does following a link to one on the same page (a decision on the findings).
  window.addEventListener("hashchange", openAnchor);

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event)) return;
    switch (event.key) {
      case "?": toggleHelp(); break;
      case "n": follow("next-run"); break;
      case "j": showHit(1); break;
      case "k": showHit(-1); break;
      case "1": chooseVerdict("safe"); break;
      case "2": chooseVerdict("uncertain"); break;
      case "3": chooseVerdict("unsafe"); break;
      case "/": {
        var first = document.querySelector("form.filters input");
        if (first) { event.preventDefault(); first.focus(); }
        break;
      }
      default: return;
    }
  });
})();
