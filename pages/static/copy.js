// The copy buttons of secrets shown once. Without JavaScript the buttons
// stay hidden and the secret is selected in its read-only field instead.
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("button[data-copy]").forEach(function (btn) {
    var input = document.getElementById(btn.getAttribute("data-copy"));
    if (!input) return;
    btn.hidden = false;
    btn.addEventListener("click", function () {
      input.focus();
      input.select();
      var done = function () {
        btn.textContent = "Copied";
        setTimeout(function () { btn.textContent = "Copy"; }, 2000);
      };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(input.value).then(done, function () { document.execCommand("copy"); done(); });
      } else {
        document.execCommand("copy");
        done();
      }
    });
  });
  document.querySelectorAll("input[data-select-on-focus]").forEach(function (input) {
    input.addEventListener("focus", function () { input.select(); });
  });
});
