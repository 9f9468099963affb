// Light or dark as Airflow's own UI is: its theme (next-themes) is kept in localStorage under "theme" ("light", "dark"
// or "system"), which this page shares with Airflow (same origin); "system" and no choice follow the browser. Set
// before the body is drawn (no flash), and again whenever Airflow's toggle or the system changes it.
(function () {
  var system = window.matchMedia("(prefers-color-scheme: dark)");
  function apply() {
    var chosen = null;
    try { chosen = window.localStorage.getItem("theme"); } catch (e) { /* storage refused: follow the system */ }
    var dark = chosen === "dark" || (chosen !== "light" && system.matches);
    document.documentElement.classList.toggle("dark", dark);
    document.documentElement.style.colorScheme = dark ? "dark" : "light";
  }
  apply();
  window.addEventListener("storage", function (event) { if (event.key === "theme") { apply(); } });
  system.addEventListener("change", apply);
})();
