/* Draws the page's charts (figure.chart: ui/charts.py) with Apache ECharts, again when Airflow's theme turns light or
   dark, and after a part of the page was swapped in (window.ftopsCharts(part)). SVG rendering: crisp, and its text
   stays text. */
(function () {
  "use strict";
  var renderers = {
    // A stage's bar from value [row, start_s, end_s], clipped to the plot (a zoomed axis cuts it, not the page).
    stageBar: function (params, api) {
      var row = api.value(0), start = api.coord([api.value(1), row]), end = api.coord([api.value(2), row]);
      var height = api.size([0, 1])[1] * 0.6, plot = params.coordSys;
      var shape = echarts.graphic.clipRectByRect(
        {x: start[0], y: start[1] - height / 2, width: Math.max(2, end[0] - start[0]), height: height},
        {x: plot.x, y: plot.y, width: plot.width, height: plot.height});
      return shape && {type: "rect", shape: shape, style: api.style()};
    }
  };
  function draw(figure) {
    var box = figure.querySelector(".chart-canvas");
    var option = JSON.parse(figure.querySelector(".chart-option").textContent);
    (option.series || []).forEach(function (s) {
      if (typeof s.renderItem === "string") s.renderItem = renderers[s.renderItem];
    });
    var style = getComputedStyle(document.body);
    option.backgroundColor = "transparent";
    option.animation = false;  // drawn at once: a redraw every 20 s would otherwise replay it
    option.textStyle = {fontFamily: style.fontFamily};
    var old = echarts.getInstanceByDom(box);
    if (old) old.dispose();
    var dark = document.documentElement.classList.contains("dark");
    echarts.init(box, dark ? "dark" : null, {renderer: "svg"}).setOption(option);
  }
  window.ftopsCharts = function (root) {
    if (!window.echarts) return;
    (root || document).querySelectorAll("figure.chart").forEach(draw);
  };
  // Before a part is swapped out: its charts' instances let go (each keeps a render loop until disposed).
  window.ftopsCharts.dispose = function (root) {
    if (!window.echarts) return;
    root.querySelectorAll(".chart-canvas").forEach(function (box) {
      var chart = echarts.getInstanceByDom(box);
      if (chart) chart.dispose();
    });
  };
  document.addEventListener("DOMContentLoaded", function () { window.ftopsCharts(); });
  new MutationObserver(function () { window.ftopsCharts(); })
    .observe(document.documentElement, {attributes: true, attributeFilter: ["class"]});
  window.addEventListener("resize", function () {
    if (!window.echarts) return;
    document.querySelectorAll(".chart-canvas").forEach(function (box) {
      var chart = echarts.getInstanceByDom(box);
      if (chart) chart.resize();
    });
  });
})();
