// The sticky bar and the folded sections (analyzer.report.navigation).
(function () {
  var bar = document.getElementById('toolbar');
  if (!bar) return;
  // An anchor's section starts below the sticky bar, however tall the bar has wrapped.
  function margin() {
    document.documentElement.style.setProperty('--toolbar', (bar.offsetHeight + 8) + 'px');
  }
  margin();
  window.addEventListener('resize', margin);
  // A link in the contents closes them, so that the section is not hidden behind the list.
  var toc = bar.querySelector('details.toc');
  toc.addEventListener('click', function (event) {
    if (event.target.tagName === 'A') toc.open = false;
  });
  // A link to a folded section (the contents, What it costs, an address with its anchor)
  // opens it.
  function openTarget() {
    var target = location.hash && document.getElementById(location.hash.slice(1));
    var details = target && (target.querySelector('details.section') || target.closest('details'));
    if (details) details.open = true;
  }
  window.addEventListener('hashchange', openTarget);
  openTarget();
  // Each chart's own height, as drawn (the language filter changes it with the rows it shows).
  Array.prototype.forEach.call(document.querySelectorAll('.js-plotly-plot'), function (div) {
    if (div.layout && div.layout.height) div.setAttribute('data-height', div.layout.height);
  });
  // A section opened lays its charts out anew (they may have been drawn while closed).
  Array.prototype.forEach.call(document.querySelectorAll('details.section'), function (details) {
    details.addEventListener('toggle', function () {
      if (!details.open || !window.Plotly) return;
      var laid = Array.prototype.map.call(details.querySelectorAll('.js-plotly-plot'), function (div) {
        // resize() fits the width, and forgets a height it was not given with a width: the
        // chart's own (data-height, which the language filter keeps) is given back.
        return Promise.resolve(Plotly.Plots.resize(div)).then(function () {
          var wanted = parseFloat(div.getAttribute('data-height'));
          if (wanted && div.layout.height !== wanted) return Plotly.relayout(div, {height: wanted});
        });
      });
      Promise.all(laid).then(function () { details.setAttribute('data-laid-out', ''); });
    });
  });
})();
