// The workflow pages: bring a corpus, start a run, watch it (or its place in the queue).
// Each page's element says which part runs (#upload, #new-run, #watch, #queued). What the
// server answers is shown as text (textContent), never as HTML. Watching is a long poll
// (?after=N&wait=30): the server answers when something changed, holding no thread meanwhile.
(function () {
  'use strict';
  var $ = function (id) { return document.getElementById(id); };
  var WAIT = 30;

  var element = analyzer.element, send = analyzer.send;  // common.js
  var page = pageData();  // page-data.js: what the page's part needs (its run, its limit, ...)

  // What a watcher says when its request failed: the session ended, or the server is away.
  function unanswered(error) {
    return error.status === 401 ? error.message : 'The server did not answer; trying again…';
  }

  function show(node, text) {
    node.textContent = text || '';
    node.hidden = !text;
  }

  // The page's buttons come disabled: one is enabled once its handler is attached, so a click
  // before the script ran is not lost (nor a native submission of a script-only form).
  function ready(button) { button.disabled = false; }

  function busy(form, text) {
    var button = form.querySelector('button[type=submit]');
    if (button) button.disabled = !!text;
    show($('form-status'), text);
  }

  // ---- Bring a corpus ------------------------------------------------------------------
  function upload(form) {
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      show($('form-error'), '');
      var file = $('upload-file').files[0];
      if (!file) { show($('form-error'), 'Choose a file first.'); return; }
      var limit = Number(page.limit);
      if (limit && file.size > limit) {
        show($('form-error'), file.name + ' has ' + file.size.toLocaleString('en') +
             ' bytes; this server takes corpora of at most ' + limit.toLocaleString('en') + '.');
        return;
      }
      var body = new FormData(form);
      ['name', 'format', 'split'].forEach(function (key) {
        if (!body.get(key)) body.delete(key);  // empty: the server's default
      });
      busy(form, 'Reading and checking ' + file.name + '…');
      send('POST', page.action, {body: body})
        .then(function (answer) { busy(form, ''); stored(answer.data); })
        .catch(function (error) { busy(form, ''); show($('form-error'), error.message); });
    });
    ready(form.querySelector('button[type=submit]'));
  }

  function stored(answer) {
    var corpus = answer.corpus, holder = $('stored');
    holder.textContent = '';
    var verb = {created: 'Stored', replaced: 'Replaced', unchanged: 'Already stored, unchanged:'};
    holder.appendChild(element('p', (verb[answer.status] || answer.status) + ' corpus ' +
      corpus.name + ': ' + corpus.languages.length + ' languages × ' +
      corpus.units.toLocaleString('en') + ' units.', 'lead'));
    if (answer.dropped_empty_units) {
      holder.appendChild(element('p', 'Dropped ' + answer.dropped_empty_units +
                                 ' unit(s) empty in some language.'));
    }
    var table = element('table'), head = element('tr');
    ['language', 'name', 'units', 'bytes', 'bytes per character'].forEach(function (title) {
      head.appendChild(element('th', title));
    });
    table.appendChild(element('thead')).appendChild(head);
    var rows = table.appendChild(element('tbody'));
    corpus.language_stats.forEach(function (stat) {
      var row = element('tr');
      [stat.lang, stat.name, stat.units.toLocaleString('en'), stat.bytes.toLocaleString('en'),
       stat.bytes_per_char.toFixed(2)].forEach(function (cell) { row.appendChild(element('td', cell)); });
      rows.appendChild(row);
    });
    holder.appendChild(table);
    var next = element('a', 'Start a run on ' + corpus.name);
    next.id = 'start-run';
    next.href = '/runs/new?corpus=' + encodeURIComponent(corpus.name);
    holder.appendChild(element('p')).appendChild(next);
    holder.hidden = false;
  }

  // ---- New run -------------------------------------------------------------------------
  function items(text, patterns) {
    // One item per line; a line that is not a pattern (re:..., split:...) splits at commas,
    // as the command line's lists do.
    var found = [];
    text.split('\n').forEach(function (line) {
      line = line.trim();
      if (!line) return;
      if (patterns.some(function (prefix) { return line.indexOf(prefix) === 0; })) {
        found.push(line);
      } else {
        line.split(/[,\s]+/).forEach(function (part) { if (part) found.push(part); });
      }
    });
    return found;
  }

  // A number as typed, when it is one JSON can carry exactly: a finite decimal (an integer:
  // digits only, within what a double holds exactly). Anything else (abc, Infinity, 1e999,
  // 9223372036854775807) is sent as the text typed, which the server reads exactly or refuses
  // at its field; never dropped, never made null by JSON (JSON has no Infinity).
  var INTEGER = /^[+-]?\d+$/, DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

  function number(text, integer) {
    var value = (integer ? INTEGER : DECIMAL).test(text) ? Number(text) : NaN;
    var exact = integer ? Number.isSafeInteger(value) : isFinite(value);
    return exact ? value : text;
  }

  function collect(form) {
    var patterns = page.patterns || [];
    var body = {};
    Array.prototype.forEach.call(form.querySelectorAll('[data-setting]'), function (control) {
      var name = control.getAttribute('data-setting'), kind = control.getAttribute('data-kind');
      var text = control.value === undefined ? '' : String(control.value).trim();
      if (kind === 'bool') { body[name] = control.checked; return; }
      if (kind === 'choices') {
        body[name] = Array.prototype.slice.call(control.querySelectorAll('input:checked'))
          .map(function (box) { return box.value; });
        return;
      }
      if (!text) return;  // empty: the default
      if (kind === 'int') body[name] = number(text, true);
      else if (kind === 'float') body[name] = number(text, false);
      else if (kind === 'ints') body[name] = items(text, []).map(function (t) { return number(t, true); });
      else if (kind === 'texts') body[name] = items(text, patterns);
      else if (kind === 'weights') {
        var weights = {};
        items(text, []).forEach(function (pair) {
          var at = pair.indexOf('=');
          weights[at < 0 ? pair : pair.slice(0, at)] = at < 0 ? pair : number(pair.slice(at + 1), false);
        });
        body[name] = weights;
      } else body[name] = text;
    });
    // A list's text entry beside its boxes (other tokenizers: hf:ORG/NAME) adds its items.
    Array.prototype.forEach.call(form.querySelectorAll('[data-adds]'), function (control) {
      var name = control.getAttribute('data-adds');
      var more = items(String(control.value || ''), patterns);
      if (more.length) body[name] = (body[name] || []).concat(more);
    });
    return body;
  }

  function clearErrors(form) {
    show($('form-error'), '');
    Array.prototype.forEach.call(form.querySelectorAll('.setting .error'), function (node) { show(node, ''); });
    Array.prototype.forEach.call(form.querySelectorAll('[aria-invalid]'), function (node) {
      node.removeAttribute('aria-invalid');
    });
  }

  // Every refusal at its field at once (the answer's `problems`, each {field, message});
  // one of no field, or of a field the form has not, above the form. The first field
  // refused gets the focus.
  function refused(form, error) {
    var problem = error.problem || {};
    var problems = problem.problems || [{field: problem.setting || null, message: error.message}];
    var byField = {}, general = [], first = null;
    problems.forEach(function (item) {
      var control = item.field && $('setting-' + item.field);
      if (!control) { general.push(item.message); return; }
      (byField[item.field] = byField[item.field] || []).push(item.message);
    });
    Object.keys(byField).forEach(function (field) {
      var control = $('setting-' + field);
      show($('setting-' + field + '-error'), byField[field].join('; '));
      control.setAttribute('aria-invalid', 'true');
      Array.prototype.forEach.call(form.querySelectorAll('[data-adds="' + field + '"]'), function (more) {
        more.setAttribute('aria-invalid', 'true');
      });
      var details = control.closest('details');
      if (details) details.open = true;
    });
    show($('form-error'), general.join('; '));
    first = form.querySelector('[data-setting][aria-invalid]');  // the first in the form's order
    if (first) first.focus();
  }

  // A key for a run's request (Idempotency-Key): the same settings sent again (a second
  // click, a retry after no answer) carry the same key, so the server starts nothing twice;
  // other settings get a new one.
  function newKey() {
    var bytes = new Uint8Array(16);
    window.crypto.getRandomValues(bytes);
    return Array.prototype.map.call(bytes, function (b) { return (b + 256).toString(16).slice(1); }).join('');
  }

  function newRun(form) {
    var sent = null, key = null;
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      clearErrors(form);
      busy(form, 'Checking the settings…');
      var body = JSON.stringify(collect(form));
      if (body !== sent) { sent = body; key = newKey(); }
      send('POST', '/api/runs', {headers: {'Content-Type': 'application/json', 'Idempotency-Key': key},
                                 body: body})
        .then(function (answer) {
          var data = answer.data;
          location.assign(data.run ? '/runs/' + data.run : '/queue/' + data.id);
        })
        .catch(function (error) {
          busy(form, '');
          refused(form, error);
        });
    });
    ready(form.querySelector('button[type=submit]'));
  }

  // ---- Watching ------------------------------------------------------------------------
  // Ask `url` again each time the server says something changed; `seen(data)` says whether
  // to go on. A failed request (the server restarting) is tried again a little later, unless
  // the session has ended.
  function follow(url, seen) {
    var after = null, pause = 1000;
    function ask() {
      var query = after === null ? '' : '?after=' + after + '&wait=' + WAIT;
      send('GET', url + query).then(function (answer) {
        pause = 1000;
        after = answer.changes;
        if (seen(answer.data)) ask();
      }).catch(function (error) {
        seen(null, error);
        if (error.status === 401) return;  // signed out: asking again would not change that
        setTimeout(ask, pause);
        pause = Math.min(pause * 2, 15000);
      });
    }
    ask();
  }

  function progressRows(progress) {
    var body = document.querySelector('#progress tbody');
    body.textContent = '';
    Object.keys(progress).forEach(function (label) {
      var step = progress[label], row = element('tr');
      row.appendChild(element('td', label));
      row.appendChild(element('td', step.stage));
      row.appendChild(element('td', step.total ? step.done + ' / ' + step.total : step.done));
      var bar = element('progress');
      bar.max = step.total || 1; bar.value = Math.min(step.done, step.total || 1);
      row.appendChild(element('td')).appendChild(bar);
      body.appendChild(row);
    });
  }

  function watchRun() {
    var run = page.run, status = $('run-status');
    var stop = $('interrupt');
    if (stop) {
      stop.addEventListener('click', function () {
        stop.disabled = true;
        status.textContent = 'interrupting…';
        send('DELETE', '/api/runs/' + run).catch(function (error) {
          show($('run-error'), error.message);
          stop.disabled = false;
        });
      });
      ready(stop);
    }
    if (page.status !== 'running') return;
    follow('/api/runs/' + run, function (data, error) {
      if (error) { status.textContent = unanswered(error); return true; }
      status.textContent = data.status;
      status.className = 'status-' + data.status;
      if (data.status === 'complete') { location.reload(); return false; }
      if (data.status !== 'running') {
        show($('run-error'), data.error || ('the run is ' + data.status));
        if (stop) stop.hidden = true;
        return false;
      }
      progressRows(data.progress || {});
      return true;
    });
  }

  function watchQueued() {
    var id = page.queued, status = $('queue-status'), cancel = $('cancel');
    if (cancel) {
      cancel.addEventListener('click', function () {
        cancel.disabled = true;
        send('DELETE', '/api/queue/' + id).then(function (answer) {
          status.textContent = answer.data.status;
          cancel.hidden = true;
        }).catch(function (error) { show($('queue-error'), error.message); cancel.disabled = false; });
      });
      ready(cancel);
    }
    follow('/api/queue/' + id, function (data, error) {
      if (error) { status.textContent = unanswered(error); return true; }
      if (data.status === 'started' && data.run) { location.assign('/runs/' + data.run); return false; }
      if (data.status === 'waiting') {
        status.textContent = 'waiting: number ' + data.position + ' in the queue';
        return true;
      }
      status.textContent = data.status;
      if (data.error) show($('queue-error'), data.error);
      if (cancel) cancel.hidden = true;
      return data.status === 'starting';
    });
  }

  if ($('upload')) upload($('upload'));
  if ($('new-run')) newRun($('new-run'));
  if ($('watch')) watchRun();
  if ($('queued')) watchQueued();
})();
