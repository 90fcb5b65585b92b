// The playground: texts in, tokens out, as you type. Everything shown is set as text
// (textContent), never as HTML, so nothing a corpus or a user types can run.
(function () {
  'use strict';
  var $ = function (id) { return document.getElementById(id); };
  var sequence = 0, timer = null;
  var noRun = null;  // what to do when there is no run yet (set once the lists are in)

  var element = analyzer.element, request = analyzer.request;  // common.js
  var page = pageData();  // page-data.js: {own, shownFirst, ticked}

  function say(text) { $('status').textContent = text; }

  function checkbox(container, value, label, checked) {
    var box = element('input');
    box.type = 'checkbox'; box.value = value; box.checked = checked;
    var wrap = element('label', null, 'choice');
    wrap.appendChild(box); wrap.appendChild(document.createTextNode(' ' + label));
    container.appendChild(wrap);
  }

  function checked(container) {
    return Array.prototype.slice.call(container.querySelectorAll('input:checked'))
      .map(function (box) { return box.value; });
  }

  // One's own text is sent as a language of this key (the page data's `own`), and reads as
  // "your text".
  var OWN = page.own;
  function shown(lang) { return lang === OWN ? 'your text' : lang; }

  function setTexts(texts) {
    var holder = $('texts');
    holder.textContent = '';
    Object.keys(texts).forEach(function (lang) {
      var label = element('label', null, 'text');
      label.appendChild(element('span', shown(lang), 'lang'));
      var area = element('textarea');
      area.rows = 2; area.value = texts[lang]; area.setAttribute('data-lang', lang);
      label.appendChild(area);
      holder.appendChild(label);
    });
  }

  function texts() {
    var found = {};
    Array.prototype.forEach.call(document.querySelectorAll('#texts textarea'), function (area) {
      found[area.getAttribute('data-lang')] = area.value;
    });
    return found;
  }

  function loadUnit() {
    var corpus = $('corpus').value;
    if (!corpus) { var own = {}; own[OWN] = ''; setTexts(own); return Promise.resolve(); }
    return request('GET', '/api/corpora/' + encodeURIComponent(corpus) + '/units/' +
                   encodeURIComponent($('unit').value || '0'))
      .then(setTexts).then(update).catch(function (error) { say(error.message); });
  }

  function loadVocabularies() {
    var holder = $('vocabs');
    var shownFirst = page.shownFirst || [];  // kinds ticked at first
    holder.textContent = '';
    if (!$('run').value) {
      if (noRun) holder.appendChild(element('p', noRun, 'muted empty'));
      update();
      return Promise.resolve();
    }
    return request('GET', '/api/runs/' + $('run').value + '/vocabularies').then(function (list) {
      var seen = {};
      list.forEach(function (v) {
        if (v.kind === 'production' || seen[v.scope]) return;
        seen[v.scope] = true;
        checkbox(holder, v.scope, v.scope + ' (' + v.kind + ')',
                 shownFirst.indexOf(v.kind) >= 0);
      });
      update();
    }).catch(function (error) { say(error.message); });
  }

  // The tokenizers side by side, a column each (the grid wraps them on a narrow screen): in
  // each, every language's count and premium, and its pieces beneath. A piece's bytes that
  // are not a whole character come written as the terminal writes them (‹e0 b8›: the
  // server's `bpe.readable.marked`), and the key says so.
  function render(result) {
    var holder = $('results');
    holder.textContent = '';
    var byVocab = {};
    result.rows.forEach(function (row) { (byVocab[row.vocab] = byVocab[row.vocab] || []).push(row); });
    // A premium is one language's tokens against another's: of one text alone, there is none.
    var premiums = result.languages.length > 1;
    var columns = 2 + (premiums ? 1 : 0);
    Object.keys(byVocab).forEach(function (vocab) {
      var section = element('section', null, 'vocab');
      section.setAttribute('data-vocab', vocab);
      section.appendChild(element('h2', vocab));
      var table = element('table');
      var head = element('tr');
      ['language', 'tokens'].concat(premiums ? ['premium vs ' + shown(result.pivot)] : [])
        .forEach(function (title) { head.appendChild(element('th', title)); });
      table.appendChild(head);
      byVocab[vocab].forEach(function (row) {
        var line = element('tr');
        line.setAttribute('data-lang', row.lang);
        line.appendChild(element('td', shown(row.lang)));
        line.appendChild(element('td', row.tokens, 'count'));
        if (premiums) {
          line.appendChild(element('td', row.premium === null ? '–' : row.premium.toFixed(2) + '×'));
        }
        table.appendChild(line);
        var under = element('tr', null, 'pieces-row');
        var cell = element('td', null, 'pieces');
        cell.colSpan = columns;
        row.pieces.forEach(function (piece, index) {
          cell.appendChild(element('span', piece, 'piece p' + (index % 6)));
        });
        under.appendChild(cell);
        table.appendChild(under);
      });
      section.appendChild(table);
      holder.appendChild(section);
    });
    $('partial-key').hidden = !result.rows.length;
  }

  function update() {
    clearTimeout(timer);
    timer = setTimeout(function () {
      var body = {texts: texts(), pieces: true, tokenizers: checked($('tokenizers'))};
      if ($('run').value) {
        body.run = Number($('run').value);
        body.vocabs = checked($('vocabs'));
        if ($('size').value) body.size = Number($('size').value);
      }
      if (!body.run && !body.tokenizers.length) {
        $('results').textContent = '';
        say('Choose a run or a tokenizer.');
        return;
      }
      var mine = ++sequence;
      say('Counting…');
      request('POST', '/api/compare', body).then(function (result) {
        if (mine !== sequence) return;  // a later request is on its way
        render(result);
        say(result.rows.length + ' counts' +
            (result.languages.length > 1 ? '; pivot ' + result.pivot + '.' : '.'));
      }).catch(function (error) { if (mine === sequence) say(error.message); });
    }, 150);
  }

  // Until the lists are in, the page says it is loading (set by the server, so it shows
  // before this script runs); then it says what there is, and what to do when there is none.
  function showLoaded(corpora, runs, tokenizers) {
    $('run').options[0].textContent = '(none)';
    $('tokenizers').textContent = '';
    $('controls').removeAttribute('aria-busy');
    say('');  // loaded: what is counted next says itself
    if (!runs.length) {
      noRun = corpora.length
        ? 'No run yet: make one with "analyzer run --vocab 512", then reload this page.'
        : 'No corpus and no run yet: "analyzer ingest" stores the sample corpus, then ' +
          '"analyzer run --vocab 512" trains on it; reload this page after.';
    }
    if (!tokenizers.length) {
      $('tokenizers').appendChild(element('p', 'No catalog tokenizer is on this machine: ' +
        '"analyzer tokenizers get NAME" fetches one.', 'muted empty'));
    }
  }

  Promise.all([request('GET', '/api/corpora'), request('GET', '/api/runs'),
               request('GET', '/api/tokenizers')]).then(function (loaded) {
    loaded[0].forEach(function (corpus) {
      var option = element('option', corpus.name + ' (' + corpus.units + ' units)');
      option.value = corpus.name;
      $('corpus').appendChild(option);
    });
    var complete = loaded[1].filter(function (run) { return run.status === 'complete'; });
    complete.forEach(function (run) {
      var option = element('option', 'run ' + run.id + ' on ' + run.corpus + ' (' +
                           (run.sizes.length ? run.sizes.join(', ') : 'no sizes') + ')');
      option.value = run.id;
      $('run').appendChild(option);
    });
    var available = loaded[2].filter(function (item) { return item.available; });
    showLoaded(loaded[0], complete, available);
    if (complete.length) $('run').value = complete[complete.length - 1].id;
    // Ticked at first: the page's well-known ones that are here (`ticked`), else the first.
    var ticked = page.ticked || [];
    var names = available.map(function (item) { return item.name; });
    if (!names.some(function (name) { return ticked.indexOf(name) >= 0; })) ticked = names.slice(0, 1);
    available.forEach(function (item) {
      checkbox($('tokenizers'), item.name, item.name + ' (' + item.family + ')',
               ticked.indexOf(item.name) >= 0);
    });
    $('corpus').addEventListener('change', loadUnit);
    $('unit').addEventListener('change', loadUnit);
    $('run').addEventListener('change', loadVocabularies);
    $('controls').addEventListener('input', function (event) {
      if (event.target.id !== 'corpus' && event.target.id !== 'unit' && event.target.id !== 'run') update();
    });
    $('controls').addEventListener('submit', function (event) { event.preventDefault(); });
    return loadVocabularies();
  }).catch(function (error) { say(error.message); });
})();
