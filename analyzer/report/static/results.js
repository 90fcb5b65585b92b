// A results page (analyzer.report.results): two tokenizers side by side, on the premiums
// against the reference chosen (static/reference.js recomputes them, then fires `reference`).
(function () {
  var table = document.getElementById('answer-table');
  var heads = Array.prototype.slice.call(table.tHead.rows[0].cells);
  var first = 3;  // language, script, median, then a column per tokenizer
  var data = pageData(), names = data.names;
  var text = answerReference.text;  // the premiums themselves: static/reference.js
  function rows() { return Array.prototype.slice.call(table.tBodies[0].rows); }
  // Two tokenizers: each language a point (premium under x, under y), the diagonal y = x.
  function draw() {
    var x = document.getElementById('compare-x'), y = document.getElementById('compare-y');
    var cx = first + x.selectedIndex, cy = first + y.selectedIndex;
    var svg = document.getElementById('scatter'), W = 560, H = 420, M = 48;
    var reference = document.getElementById('reference').value;
    var points = rows().filter(function (row) {
        return !row.hidden && row.style.display !== 'none' && row.getAttribute('data-lang') !== reference; })
      .map(function (row) { return [parseFloat(row.cells[cx].getAttribute('data-v')),
                                    parseFloat(row.cells[cy].getAttribute('data-v')),
                                    row.cells[0].getAttribute('data-v'),
                                    row.getAttribute('data-lang')]; });
    var xl = x.options[x.selectedIndex].text, yl = y.options[y.selectedIndex].text;  // with models
    var all = points.reduce(function (a, p) { return a.concat([p[0], p[1]]); }, [1]);
    var lo = Math.log2(Math.min.apply(null, all)), hi = Math.log2(Math.max.apply(null, all));
    if (hi - lo < 0.5) { lo -= 0.25; hi += 0.25; }
    function sx(v) { return M + (Math.log2(v) - lo) / (hi - lo) * (W - 2 * M); }
    function sy(v) { return H - M - (Math.log2(v) - lo) / (hi - lo) * (H - 2 * M); }
    var ns = 'http://www.w3.org/2000/svg';
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    function add(tag, attrs, content) {
      var node = document.createElementNS(ns, tag);
      Object.keys(attrs).forEach(function (k) { node.setAttribute(k, attrs[k]); });
      if (content) node.textContent = content;
      svg.appendChild(node); return node;
    }
    add('line', {x1: sx(Math.pow(2, lo)), y1: sy(Math.pow(2, lo)), x2: sx(Math.pow(2, hi)),
                 y2: sy(Math.pow(2, hi)), stroke: '#999', 'stroke-dasharray': '4 3'});
    [0.5, 1, 2, 4, 8, 16].forEach(function (v) {
      if (Math.log2(v) < lo || Math.log2(v) > hi) return;
      add('text', {x: sx(v), y: H - M + 16, 'text-anchor': 'middle', 'font-size': 12}, v + 'x');
      add('text', {x: M - 6, y: sy(v) + 4, 'text-anchor': 'end', 'font-size': 12}, v + 'x');
    });
    add('text', {x: W / 2, y: H - 8, 'text-anchor': 'middle', 'font-size': 13}, xl);
    add('text', {x: 14, y: H / 2, 'text-anchor': 'middle', 'font-size': 13,
                 transform: 'rotate(-90 14 ' + H / 2 + ')'}, yl);
    var cheaper = 0;
    points.forEach(function (p) {
      if (p[1] < p[0]) cheaper++;
      add('circle', {cx: sx(p[0]), cy: sy(p[1]), r: 4, fill: '#2b6cb0', 'fill-opacity': 0.7})
        .appendChild(document.createElementNS(ns, 'title')).textContent =
          p[2] + ': ' + text(p[0]) + ' under ' + xl + ', ' + text(p[1]) + ' under ' + yl +
          ' (ratio ' + (p[1] / p[0]).toFixed(2) + ')';
    });
    // the ratio table: a row per language, as sorted and downloaded as any table
    // its CSV: the language's code and name, each premium under its tokenizer's name, and
    // the reference (analyzer.report.downloads)
    var ratios = document.getElementById('ratios');
    ratios.setAttribute('data-reference', reference);
    [['ratio-x', x], ['ratio-y', y]].forEach(function (pair) {
      var th = document.getElementById(pair[0]);
      th.textContent = pair[1].value;
      th.setAttribute('data-csv', 'premium_' + pair[1].value);
    });
    var body = ratios.tBodies[0];
    while (body.firstChild) body.removeChild(body.firstChild);
    points.forEach(function (p) {
      var row = body.insertRow();
      row.setAttribute('data-lang', p[3]);
      [[p[2], p[2]], [text(p[0]), String(p[0])], [text(p[1]), String(p[1])],
       [(p[1] / p[0]).toFixed(2), String(p[1] / p[0])]].forEach(function (cell) {
        var td = row.insertCell(); td.textContent = cell[0];
        td.setAttribute('data-v', cell[1]);
      });
    });
    var same = points.every(function (p) { return Math.abs(p[0] - p[1]) < 5e-5; });
    document.getElementById('compare-said').textContent = x.value === y.value ? '' : same
      ? xl + ' and ' + yl + ' give the same premium to every language: their counts '
        + 'of this text agree (their vocabularies may still differ).'
      : cheaper + ' of ' + points.length + ' languages (' + names[reference] + ' aside) pay a '
        + 'lower premium against ' + names[reference] + ' under ' + yl + ' than under '
        + xl + '; a point below the diagonal is one of them.';
  }
  table.addEventListener('reference', draw);
  document.getElementById('compare-x').addEventListener('change', draw);
  document.getElementById('compare-y').addEventListener('change', draw);
  if (heads.length > first + 1) document.getElementById('compare-y').selectedIndex = 1;
  draw();
})();
