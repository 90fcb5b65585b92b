// Every table.data of a page (analyzer.report.answer): sorting by a column, grouping by
// script, downloading as CSV.
(function () {
  // Every table.data: a click on a heading sorts by that column (again: the other way), and
  // its CSV button downloads what it holds (each cell's data-v, else its text).
  function value(cell, type) {
    var raw = cell.hasAttribute('data-v') ? cell.getAttribute('data-v') : cell.textContent.trim();
    if (type !== 'number') return raw.toLowerCase();
    var n = parseFloat(raw.replace(/[$,x%\u25b2\s]/g, ''));
    return isNaN(n) ? -Infinity : n;
  }
  function byScript(table) {  // the table's own 'group by script' box, if it has one
    var box = table.closest('.answer');
    return box && box.querySelector('.tools input.by-script');
  }
  function sortBy(table, index, type, descending) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = value(a.cells[index], type), y = value(b.cells[index], type);
      return (x < y ? -1 : x > y ? 1 : 0) * (descending ? -1 : 1);
    });
    var grouped = byScript(table);
    var script = Array.prototype.findIndex.call(table.tHead.rows[0].cells,
      function (th) { return th.textContent.trim() === 'script'; });
    if (grouped && grouped.checked && script >= 0) {
      rows.sort(function (a, b) {  // stable: the chosen order within each script
        var x = value(a.cells[script], 'text'), y = value(b.cells[script], 'text');
        return x < y ? -1 : x > y ? 1 : 0;
      });
    }
    rows.forEach(function (row) { body.appendChild(row); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
      if (i === index) th.setAttribute('aria-sort', descending ? 'descending' : 'ascending');
      else th.removeAttribute('aria-sort');
    });
  }
  // A table's CSV, as analyzer.report.downloads says: a row's language code first (`lang`,
  // where rows have data-lang), a column per heading named by its data-csv (else its text),
  // then the table's data-columns, data-reference and data-run, the same on every row; each
  // cell's data-v (a plain number), else its text.
  function csv(table) {
    function quoted(text) { return /[",\n\r]/.test(text) ? '"' + text.replace(/"/g, '""') + '"' : text; }
    var body = Array.prototype.slice.call(table.tBodies[0].rows);
    var coded = body.length > 0 && body.every(function (row) { return row.hasAttribute('data-lang'); });
    var extra = JSON.parse(table.getAttribute('data-columns') || '{}');
    ['reference', 'run'].forEach(function (name) {
      if (table.hasAttribute('data-' + name)) extra[name] = table.getAttribute('data-' + name);
    });
    var names = (coded ? ['lang'] : []).concat(
      Array.prototype.map.call(table.tHead.rows[0].cells, function (th) {
        return th.hasAttribute('data-csv') ? th.getAttribute('data-csv') : th.textContent.trim();
      }), Object.keys(extra));
    var lines = [names.map(quoted).join(',')].concat(body.map(function (row) {
      var cells = Array.prototype.map.call(row.cells, function (cell) {
        return cell.hasAttribute('data-v') ? cell.getAttribute('data-v') : cell.textContent.trim();
      });
      return (coded ? [row.getAttribute('data-lang')] : []).concat(cells, Object.keys(extra).map(
        function (name) { return String(extra[name]); })).map(quoted).join(',');
    }));
    return lines.join('\n') + '\n';
  }
  // The download's name: the table's data-file, its {reference} the reference it holds now.
  function fileName(table) {
    var file = table.getAttribute('data-file') || (table.id || 'table') + '.csv';
    return file.replace('{reference}', table.getAttribute('data-reference') || 'reference');
  }
  Array.prototype.forEach.call(document.querySelectorAll('table.data'), function (table) {
    var heads = table.tHead ? table.tHead.rows[0].cells : [];
    Array.prototype.forEach.call(heads, function (th, index) {
      if (!th.hasAttribute('data-sort')) {  // a number column if its first cell reads as one
        var first = table.tBodies[0].rows[0];
        th.setAttribute('data-sort', first && first.cells[index] &&
          value(first.cells[index], 'number') !== -Infinity ? 'number' : 'text');
      }
      th.tabIndex = 0;
      function go() {
        var descending = th.getAttribute('aria-sort') !== 'descending';
        sortBy(table, index, th.getAttribute('data-sort'), descending);
      }
      th.addEventListener('click', go);
      th.addEventListener('keydown', function (e) { if (e.key === 'Enter') go(); });
    });
    var button = document.querySelector('button.csv[data-table="' + table.id + '"]');
    if (!button) {
      button = document.createElement('button');
      button.type = 'button'; button.className = 'csv'; button.textContent = 'Download CSV';
      table.parentNode.insertBefore(button, table.nextSibling);
    }
    button.addEventListener('click', function () {
      var link = document.createElement('a');
      link.href = URL.createObjectURL(new Blob([csv(table)], {type: 'text/csv'}));
      link.download = fileName(table);
      document.body.appendChild(link); link.click(); link.remove();
    });
    var grouped = byScript(table);
    if (grouped) grouped.addEventListener('change', function () {
      var sorted = Array.prototype.findIndex.call(heads, function (th) {
        return th.hasAttribute('aria-sort'); });
      var at = sorted < 0 ? 2 : sorted;
      sortBy(table, at, heads[at].getAttribute('data-sort'),
             heads[at].getAttribute('aria-sort') !== 'ascending');
    });
  });
})();
