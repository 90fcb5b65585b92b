// The bill calculator (analyzer.report.calculator), offline: a month's workload priced on each
// priced model exactly as analyzer.metrics.bill does it (read its module docstring):
//   tokens_m = tokens / T(pivot, counted_by) * sum over l of mix[l] * T(l, m) + requests * framing_m
// with T(l, t) each language's tokens under tokenizer t, read from the answer table's cells
// (data-t) in the column whose heading's data-vocab is t; cost = tokens_m * input price / 1e6,
// cheapest first (a stable sort of the price table's order, as `bill`). The page data gives
// `pivot`, `names` and `bill` (`models`, `counters`). Intervals need the units: they are in
// `analyzer show --bill`, not here.
(function () {
  var form = document.getElementById('bill');
  var table = document.getElementById('answer-table');
  if (!form || !table) return;
  var data = pageData(), pivot = data.pivot, names = data.names, models = data.bill.models;
  var SUFFIXES = {'': 1, k: 1e3, m: 1e6, b: 1e9, g: 1e9, t: 1e12};
  function field(id) { return document.getElementById(id); }

  // analyzer.metrics.bill.parse_amount: `250000`, `2.5M`, `1B`; an Error saying what is wrong.
  function amount(text, what) {
    var found = /^\s*([0-9][0-9_]*(?:\.[0-9]+)?)\s*([kKmMbBgGtT]?)\s*$/.exec(text || '');
    var value = found ? parseFloat(found[1].replace(/_/g, '')) * SUFFIXES[found[2].toLowerCase()] : NaN;
    if (!(value > 0 && isFinite(value)))
      throw new Error(what + ' takes a positive amount such as 250000, 2.5M or 1B, not "' + text + '"');
    return value;
  }
  // analyzer.metrics.bill.parse_mix: LANG=SHARE pairs made to sum to 1; empty: every language alike.
  function mix(text, languages) {
    var shares = {}, total = 0;
    if (!text.trim()) {
      languages.forEach(function (lang) { shares[lang] = 1 / languages.length; });
      return shares;
    }
    text.split(',').map(function (s) { return s.trim(); }).filter(Boolean).forEach(function (part) {
      var at = part.indexOf('=');
      if (at < 0) throw new Error('the mix takes LANG=SHARE pairs (eng_Latn=0.6,hin_Deva=0.4), not "' + part + '"');
      var lang = part.slice(0, at).trim(), raw = part.slice(at + 1).trim();
      if (languages.indexOf(lang) < 0) throw new Error('the mix names "' + lang + '", which is not a language of the run');
      if (lang in shares) throw new Error('the mix names ' + lang + ' twice');
      var weight = /^[+]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(raw) ? parseFloat(raw) : NaN;
      if (!(weight >= 0 && isFinite(weight)))
        throw new Error('the mix: ' + lang + "'s share must be a number 0 or more, not \"" + raw + '"');
      shares[lang] = weight; total += weight;
    });
    if (!(total > 0)) throw new Error('the mix: the shares add up to nothing; give a language a share above 0');
    Object.keys(shares).forEach(function (lang) { shares[lang] /= total; });
    return shares;
  }
  // T(l, t): each language's tokens under tokenizer t, from the answer table.
  function totals(tokenizer) {
    var heads = table.tHead.rows[0].cells, column = -1;
    for (var c = 0; c < heads.length; c++)
      if (heads[c].getAttribute('data-vocab') === tokenizer) { column = c; break; }
    var found = {};
    Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
      var cell = row.cells[column];
      if (cell && cell.hasAttribute('data-t')) found[row.getAttribute('data-lang')] = parseFloat(cell.getAttribute('data-t'));
    });
    return found;
  }
  function dollars(v) { return '$' + v.toLocaleString('en-US', {minimumFractionDigits: 2, maximumFractionDigits: 2}); }
  function whole(v) { return v.toLocaleString('en-US', {maximumFractionDigits: 0}); }

  // analyzer.metrics.bill.Workload.words
  function words(workload) {
    var values = Object.keys(workload.mix).map(function (l) { return workload.mix[l]; });
    var even = values.every(function (v) { return v === values[0]; }) && values.length > 1;
    var said = even ? "mixed evenly over the run's languages" : Object.keys(workload.mix).map(function (l) {
      return Math.round(workload.mix[l] * 100) + '% ' + names[l]; }).join(', ');
    return whole(workload.tokens) + ' tokens a month of ' + names[pivot] + ' as ' +
      workload.countedBy + ' counts it, ' + said +
      (workload.requests ? ', in ' + whole(workload.requests) + ' requests' : '');
  }
  // analyzer.metrics.bill.bill: a row per priced model, cheapest first.
  function price(workload) {
    var yardstick = totals(workload.countedBy)[pivot];
    if (!(yardstick > 0)) throw new Error(workload.countedBy + ' counts no token of ' + names[pivot] + ': it cannot measure the workload');
    var copies = workload.tokens / yardstick, rows = [];
    models.forEach(function (model) {
      var counts = totals(model.tokenizer), content = 0;
      Object.keys(workload.mix).forEach(function (lang) { content += workload.mix[lang] * counts[lang]; });
      var tokens = copies * content + workload.requests * (model.framing || 0);
      if (!isFinite(tokens)) throw new Error('the table has no count of every language under ' + model.tokenizer);
      rows.push({model: model.model, tokenizer: model.tokenizer, tokens: tokens, date: model.date,
                 cost: tokens * model.input_price / 1e6});
    });
    rows = rows.map(function (r, i) { return [r, i]; }).sort(function (a, b) {
      return a[0].cost - b[0].cost || a[1] - b[1]; }).map(function (p) { return p[0]; });
    var cheapest = rows.length ? rows[0].cost : NaN;
    rows.forEach(function (r) { r.vs_cheapest = r.cost / cheapest; });
    return rows;
  }
  // analyzer.metrics.bill.bill_sentence, without the interval.
  function sentence(rows, workload) {
    var first = rows[0], last = rows[rows.length - 1];
    var said = 'For ' + words(workload) + ', the cheapest model is ' + first.model + ': ' +
      dollars(first.cost) + ' a month of input, at its price of ' + first.date;
    if (rows.length > 1) said += '; the dearest, ' + last.model + ', costs ' +
      last.vs_cheapest.toFixed(2) + 'x that (' + dollars(last.cost) + ')';
    return said + '. Its 95 % interval is in analyzer show --bill.';
  }
  function run() {
    var out = field('bill-table'), said = field('bill-said'), body = out.tBodies[0];
    while (body.firstChild) body.removeChild(body.firstChild);
    var languages = Array.prototype.map.call(table.tBodies[0].rows, function (row) { return row.getAttribute('data-lang'); });
    try {
      var requests = field('bill-requests').value.trim();
      var workload = {tokens: amount(field('bill-tokens').value, 'tokens a month'),
                      mix: mix(field('bill-mix').value, languages),
                      countedBy: field('bill-counted-by').value,
                      requests: requests === '' || requests === '0' ? 0 : amount(requests, 'requests a month')};
      var rows = price(workload);
    } catch (problem) {
      out.hidden = true; said.className = 'problem'; said.textContent = problem.message;
      return;
    }
    rows.forEach(function (r) {
      var row = body.insertRow();
      [[r.model, r.model], [r.tokenizer, r.tokenizer], [whole(r.tokens), String(r.tokens)],
       [dollars(r.cost), String(r.cost)], [r.vs_cheapest.toFixed(2) + 'x', String(r.vs_cheapest)]]
        .forEach(function (pair) { var td = row.insertCell(); td.textContent = pair[0]; td.setAttribute('data-v', pair[1]); });
    });
    out.hidden = false; said.className = ''; said.textContent = sentence(rows, workload);
  }
  ['bill-tokens', 'bill-mix', 'bill-requests', 'bill-counted-by'].forEach(function (id) {
    field(id).addEventListener('change', run);
  });
  field('bill-go').addEventListener('click', run);
  run();
})();
