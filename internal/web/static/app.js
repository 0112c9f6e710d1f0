// gpudx page helpers. Everything works without this file; it only adds
// drag and drop of a file, Ctrl/Cmd+Enter to submit and "/" to search.
(function () {
  "use strict";

  // A file dropped on a drop zone becomes the value of its file input.
  function showName(input) {
    var out = document.querySelector('[data-file-name="' + input.id + '"]');
    if (!out) { return; }
    var f = input.files && input.files[0];
    out.hidden = !f;
    out.textContent = f ? out.getAttribute("data-format").replace("%s", f.name) : "";
  }
  Array.prototype.forEach.call(document.querySelectorAll("[data-drop]"), function (zone) {
    var input = document.getElementById(zone.getAttribute("data-drop"));
    if (!input) { return; }
    input.addEventListener("change", function () { showName(input); });
    zone.addEventListener("dragover", function (e) {
      if (e.dataTransfer && Array.prototype.indexOf.call(e.dataTransfer.types, "Files") >= 0) {
        e.preventDefault();
        zone.classList.add("over");
      }
    });
    zone.addEventListener("dragleave", function () { zone.classList.remove("over"); });
    zone.addEventListener("drop", function (e) {
      zone.classList.remove("over");
      if (!e.dataTransfer || !e.dataTransfer.files || !e.dataTransfer.files.length) { return; }
      e.preventDefault();
      input.files = e.dataTransfer.files;
      showName(input);
    });
  });

  // swallow is set while the "/" that moved the focus is still down, so
  // that its character does not land in the search box (some browsers and
  // automation tools send the character as an event of its own).
  var swallow = false;
  document.addEventListener("keypress", function (e) {
    if (swallow && e.key === "/") { e.preventDefault(); }
    swallow = false;
  }, true);
  document.addEventListener("keyup", function () { swallow = false; });

  // Ctrl+Enter (Cmd+Enter on a Mac) submits the form the focus is in.
  document.addEventListener("keydown", function (e) {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      var form = e.target && e.target.closest ? e.target.closest("form[data-submit-keys]") : null;
      if (!form) { form = document.querySelector("form[data-submit-keys]"); }
      if (form) {
        e.preventDefault();
        if (form.requestSubmit) { form.requestSubmit(); } else { form.submit(); }
      }
      return;
    }
    // "/" focuses the search box unless the person is typing somewhere.
    if (e.key === "/" && !e.ctrlKey && !e.metaKey && !e.altKey) {
      var t = e.target;
      var typing = t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName));
      var box = document.querySelector("input[data-slash]");
      if (!typing && box) {
        e.preventDefault();
        swallow = true;
        box.focus();
        box.select();
      }
    }
  });

  // The main field of a form page takes the focus, as autofocus would,
  // but only when the page opens at its top.
  var first = document.querySelector("[data-autofocus]");
  if (first && !location.hash && window.scrollY === 0) { first.focus({preventScroll: true}); }
})();
