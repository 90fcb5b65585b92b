// The answer table (analyzer.report.answer) against any reference language, as
// `analyzer show RUN --reference LANG` (analyzer.metrics.data.with_reference) computes it: a
// premium is tokens(language) / tokens(reference) under the same tokenizer, from each cell's
// tokens (data-t). Shared by the report and the results page, which both have a
// `select#reference` beside the table; the page data gives `pivot`, `names` and the colour
// `scale` (analyzer.report.answer.cell_color's). Also here, as they change the same cells:
// a search over the rows and a box per tokenizer column that hides it (the median is over the
// columns shown). After each change the table fires a `reference` event (the results page
// redraws its comparison on it).
var answerReference = (function () {
  var FIRST = 3;  // language, script, median, then a column per vocabulary or tokenizer
  function text(p) { return isNaN(p) ? 'n/a' : p.toFixed(2) + 'x'; }
  function color(scale, p) {  // analyzer.report.answer.cell_color, on log2 of the premium
    if (!(p > 0)) return ['#eee', false];
    var above = p >= 1;
    var place = Math.min(Math.abs(Math.log2(p) / Math.log2(above ? scale.high : 1 / scale.low)), 1);
    var stops = above ? scale.above : scale.below;
    for (var i = 1; i < stops.length; i++) {
      if (place <= stops[i][0]) {
        var s = (place - stops[i - 1][0]) / (stops[i][0] - stops[i - 1][0]);
        var rgb = stops[i - 1][1].map(function (a, k) { return Math.round(a + (stops[i][1][k] - a) * s); });
        return ['rgb(' + rgb.join(',') + ')', place > 0.6];
      }
    }
    return ['rgb(' + stops[stops.length - 1][1].join(',') + ')', true];
  }
  function median(values) {
    if (!values.length) return NaN;
    values = values.slice().sort(function (a, b) { return a - b; });
    return values.length % 2 ? values[(values.length - 1) / 2]
      : (values[values.length / 2 - 1] + values[values.length / 2]) / 2;
  }
  function rows(table) { return Array.prototype.slice.call(table.tBodies[0].rows); }
  function heads(table) { return Array.prototype.slice.call(table.tHead.rows[0].cells); }
  function shown(table, c) { return !heads(table)[c].hidden; }

  var table = document.getElementById('answer-table');
  var select = document.getElementById('reference');
  if (!table || !select) return {text: text, color: color};
  var data = pageData(), pivot = data.pivot, names = data.names, scale = data.scale;
  var intervals = document.getElementById('intervals');  // the results page's, if any
  var box = document.getElementById('said');
  var original = box ? box.innerHTML : '';

  // Each cell's premium against `reference`, its colour and text; each row's median over the
  // columns shown; the legend and the CSV (data-reference: its file name and column) follow.
  function recompute() {
    var reference = select.value;
    if (intervals) {
      intervals.disabled = reference !== pivot;
      if (intervals.disabled) intervals.checked = false;
      document.getElementById('intervals-said').textContent = intervals.disabled
        ? '(computed against ' + names[pivot] + ' only)' : '';
    }
    Array.prototype.forEach.call(document.querySelectorAll('.legend .reference'), function (span) {
      span.textContent = names[reference];
    });
    var base = rows(table).filter(function (row) { return row.getAttribute('data-lang') === reference; })[0];
    rows(table).forEach(function (row) {
      var values = [];
      for (var c = FIRST; c < row.cells.length; c++) {
        var cell = row.cells[c];
        cell.hidden = !shown(table, c);
        if (!cell.hasAttribute('data-t')) continue;  // not measured: a dash
        var p = parseFloat(cell.getAttribute('data-t')) / parseFloat(base.cells[c].getAttribute('data-t'));
        if (shown(table, c)) values.push(p);
        var look = color(scale, p);
        cell.setAttribute('data-v', String(p));  // downloaded as it is: every digit
        cell.style.background = look[0];
        cell.className = look[1] ? 'dark' : '';
        var said = text(p);
        if (intervals && intervals.checked && cell.hasAttribute('data-lo'))
          said += ' [' + parseFloat(cell.getAttribute('data-lo')).toFixed(2) + ', ' +
                  parseFloat(cell.getAttribute('data-hi')).toFixed(2) + ']';
        cell.textContent = said;
      }
      var m = median(values);
      row.cells[2].setAttribute('data-v', String(m));
      row.cells[2].textContent = text(m);
    });
    table.setAttribute('data-reference', reference);
    say(reference);
    table.dispatchEvent(new Event('reference'));
    // the rows in the order the table was sorted by, on the new premiums
    var grouping = table.closest('.answer') && table.closest('.answer').querySelector('input.by-script');
    if (grouping) grouping.dispatchEvent(new Event('change'));
  }
  // The sentences above the table (in #said) for the reference chosen: the page's own for the
  // pivot (analyzer.report.takeaways); the verdicts, outside #said, do not depend on it.
  function say(reference) {
    if (!box) return;
    if (reference === pivot) { box.innerHTML = original; return; }
    var others = rows(table).filter(function (row) { return row.getAttribute('data-lang') !== reference; });
    var paying = 0, top = null, all = heads(table);
    others.forEach(function (row) {
      var least = Infinity;
      for (var c = FIRST; c < row.cells.length; c++) {
        if (!row.cells[c].hasAttribute('data-t') || !shown(table, c)) continue;
        var p = parseFloat(row.cells[c].getAttribute('data-v'));
        least = Math.min(least, p);
        if (!top || p > top[0]) top = [p, row.getAttribute('data-lang'), all[c].getAttribute('data-label')];
      }
      if (least > 1.005) paying++;
    });
    var lines = [paying + ' of ' + others.length + ' languages need more tokens than ' +
                 names[reference] + ' for the same content under every tokenizer below.'];
    if (top) lines.push(names[top[1]] + ' pays most: ' + text(top[0]) + ' the tokens of ' +
                        names[reference] + ' under ' + top[2] + '.');
    box.innerHTML = '';
    lines.forEach(function (line) {
      var p = document.createElement('p'); p.className = 'lead'; p.textContent = line; box.appendChild(p);
    });
  }
  // The search: a row shows when its language's name or code holds what was typed.
  var search = document.getElementById('answer-search');
  function filter() {
    var wanted = search.value.trim().toLowerCase();
    rows(table).forEach(function (row) {
      var name = row.cells[0].getAttribute('data-v').toLowerCase();
      var code = row.getAttribute('data-lang').toLowerCase();
      row.hidden = wanted !== '' && name.indexOf(wanted) < 0 && code.indexOf(wanted) < 0;
    });
    table.dispatchEvent(new Event('reference'));
  }
  if (search) search.addEventListener('input', filter);
  // A box per column: unticked, the column is hidden and left out of the medians.
  Array.prototype.forEach.call(document.querySelectorAll('input.show-column'), function (tick) {
    tick.addEventListener('change', function () {
      heads(table).forEach(function (th) {
        if (th.getAttribute('data-csv') === tick.value) th.hidden = !tick.checked;
      });
      recompute();
    });
  });
  select.addEventListener('change', recompute);
  if (intervals) intervals.addEventListener('change', recompute);
  return {text: text, color: color, recompute: recompute};
})();
