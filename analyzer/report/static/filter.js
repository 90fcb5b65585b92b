// The language filter (analyzer.report.language_filter): narrows every chart and every
// language's row at once. The language names it searches are the page data's `names`.
(function () {
  var bar = document.getElementById('language-filter');
  if (!bar) return;
  var names = pageData().names;
  var input = bar.querySelector('input[type=search]');
  var boxes = Array.prototype.slice.call(bar.querySelectorAll('input[type=checkbox]'));
  var TYPES = {f8: Float64Array, f4: Float32Array, i4: Int32Array, u4: Uint32Array,
               i2: Int16Array, u2: Uint16Array, i1: Int8Array, u1: Uint8Array};
  function decoded(spec) {  // plotly's base64 arrays: {dtype, bdata, shape}
    if (spec._inputArray) return plain(spec._inputArray);
    var bytes = Uint8Array.from(atob(spec.bdata), function (c) { return c.charCodeAt(0); });
    var flat = Array.prototype.slice.call(new TYPES[spec.dtype](bytes.buffer));
    var shape = String(spec.shape || '').split(',').map(Number).filter(function (n) { return n > 0; });
    if (shape.length !== 2) return flat;
    var rows = [];
    for (var r = 0; r < shape[0]; r++) rows.push(flat.slice(r * shape[1], (r + 1) * shape[1]));
    return rows;
  }
  function plain(value) {  // typed and base64 arrays as plain arrays, deeply
    if (ArrayBuffer.isView(value)) return Array.prototype.slice.call(value);
    if (Array.isArray(value)) return value.map(plain);
    if (value && typeof value === 'object' && typeof value.bdata === 'string') return decoded(value);
    if (value && typeof value === 'object') {
      var copy = {};
      Object.keys(value).forEach(function (key) { copy[key] = plain(value[key]); });
      return copy;
    }
    return value;
  }
  function keep(code) {
    var on = boxes.filter(function (box) { return box.checked; }).map(function (box) { return box.value; });
    if (on.indexOf(code.split('_').pop()) < 0) return false;
    var query = input.value.trim().toLowerCase();
    return !query || code.toLowerCase().indexOf(query) >= 0 ||
      (names[code] || '').toLowerCase().indexOf(query) >= 0;
  }
  function pick(values, kept) { return kept.map(function (i) { return values[i]; }); }
  function narrow(trace, current) {
    var out = plain(trace), meta = trace.meta || {};
    out.visible = current.visible;
    if (typeof meta.lang === 'string') {
      if (!keep(meta.lang)) { out.x = []; out.y = []; out.customdata = []; out.text = []; }
      return out;
    }
    if (Array.isArray(meta.langs)) {
      var n = meta.langs.length, kept = [];
      meta.langs.forEach(function (code, i) { if (keep(code)) kept.push(i); });
      ['x', 'y', 'text', 'customdata', 'hovertext'].forEach(function (key) {
        if (Array.isArray(out[key]) && out[key].length === n) out[key] = pick(out[key], kept);
      });
      if (out.marker && Array.isArray(out.marker.color) && out.marker.color.length === n)
        out.marker.color = pick(out.marker.color, kept);
      ['error_x', 'error_y'].forEach(function (key) {
        var bars = out[key];
        if (!bars) return;
        ['array', 'arrayminus'].forEach(function (side) {
          if (Array.isArray(bars[side]) && bars[side].length === n) bars[side] = pick(bars[side], kept);
        });
      });
      return out;
    }
    if (Array.isArray(meta.rows) || Array.isArray(meta.cols)) {
      var rows = [], cols = [];
      (meta.rows || []).forEach(function (code, i) { if (keep(code)) rows.push(i); });
      (meta.cols || []).forEach(function (code, i) { if (keep(code)) cols.push(i); });
      var byRow = Array.isArray(meta.rows), byCol = Array.isArray(meta.cols);
      ['z', 'text', 'customdata'].forEach(function (key) {
        if (!Array.isArray(out[key])) return;
        var grid = byRow ? pick(out[key], rows) : out[key];
        out[key] = byCol ? grid.map(function (row) { return pick(row, cols); }) : grid;
      });
      if (byRow && Array.isArray(out.y)) out.y = pick(out.y, rows);
      if (byCol && Array.isArray(out.x)) out.x = pick(out.x, cols);
    }
    return out;
  }
  function narrowCategories(div, data, layout) {
    // Bar charts order their language axis with a category list (also set by sliders and
    // menus): keep only the categories the narrowed traces still draw.
    var present = {};
    data.forEach(function (trace) {
      if (trace.orientation === 'h' && Array.isArray(trace.y))
        trace.y.forEach(function (name) { present[name] = true; });
    });
    function only(list) { return list.filter(function (name) { return present[name]; }); }
    var saved = div.analyzerLayout;
    if (saved.yaxis && Array.isArray(saved.yaxis.categoryarray))
      layout.yaxis = Object.assign({}, layout.yaxis, {categoryarray: only(saved.yaxis.categoryarray)});
    ['sliders', 'updatemenus'].forEach(function (kind) {
      (saved[kind] || []).forEach(function (control, c) {
        (control.steps || control.buttons || []).forEach(function (step, s) {
          var update = step.args && step.args[1];
          if (update && Array.isArray(update['yaxis.categoryarray'])) {
            var live = layout[kind][c][control.steps ? 'steps' : 'buttons'][s];
            live.args[1]['yaxis.categoryarray'] = only(update['yaxis.categoryarray']);
          }
        });
      });
    });
  }
  // Each chart's height as drawn, before a section opened (which lays it out anew) can change it.
  Array.prototype.forEach.call(document.querySelectorAll('.js-plotly-plot'), function (div) {
    div.analyzerHeight = div.layout && div.layout.height;
  });
  function apply() {
    var plots = document.querySelectorAll('.js-plotly-plot');
    var total = Object.keys(names).length, shown = Object.keys(names).filter(keep).length;
    Array.prototype.forEach.call(plots, function (div) {
      if (!div.analyzerTraces) {
        div.analyzerTraces = plain(div.data);
        if (div.analyzerHeight === undefined) div.analyzerHeight = div.layout.height;
      }
      var data = div.analyzerTraces.map(function (trace, i) { return narrow(trace, div.data[i]); });
      var perLanguage = div.analyzerTraces.some(function (trace) {
        var meta = trace.meta || {};
        return Array.isArray(meta.langs) || Array.isArray(meta.rows);
      });
      if (!div.analyzerLayout) div.analyzerLayout = plain({yaxis: div.layout.yaxis,
        sliders: div.layout.sliders, updatemenus: div.layout.updatemenus});
      var layout = Object.assign({}, div.layout);  // a new object: react redraws what changed
      if (perLanguage && div.analyzerHeight) {  // a chart with a row per language shrinks with them
        layout.height = Math.round(Math.max(380, div.analyzerHeight * (shown + 6) / (total + 6)));
        div.style.height = layout.height + 'px';
        div.setAttribute('data-height', layout.height);
        // and so does its section: the wrapper Plotly's HTML puts around it has a height too
        if (div.parentElement.style.height) div.parentElement.style.height = div.style.height;
      }
      narrowCategories(div, data, layout);
      Plotly.react(div, data, layout);
    });
    Array.prototype.forEach.call(document.querySelectorAll('tr[data-lang]'), function (row) {
      row.style.display = keep(row.getAttribute('data-lang')) ? '' : 'none';
    });
    document.getElementById('filter-count').textContent = shown + ' of ' + total + ' languages shown';
  }
  input.addEventListener('input', apply);
  boxes.forEach(function (box) { box.addEventListener('change', apply); });
})();
