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

  // What the person wants (the form's first question): measure production tokenizers, train
  // vocabularies, or both. A setting of other goals only (its `data-goals`) is hidden, and not
  // sent: measuring sends no size, training no tokenizer.
  function goalOf(form) {
    var chosen = form.querySelector('input[name=goal]:checked');
    return chosen ? chosen.value : 'both';
  }

  function offGoal(control) {
    var setting = control.closest('.setting');
    return !!(setting && setting.hidden);
  }

  function showGoal(form) {
    var goal = goalOf(form);
    Array.prototype.forEach.call(form.querySelectorAll('.setting[data-goals]'), function (setting) {
      setting.hidden = setting.getAttribute('data-goals').split(' ').indexOf(goal) < 0;
    });
  }

  // "none" in a list of sizes is no size, as the command line's --vocab none: nothing trained.
  var NONE = /^none$/i;

  function collect(form) {
    var patterns = page.patterns || [];
    var body = {};
    Array.prototype.forEach.call(form.querySelectorAll('[data-setting]'), function (control) {
      if (offGoal(control)) return;  // a setting of another goal: not asked for
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
      else if (kind === 'ints') {
        body[name] = NONE.test(text) ? [] : items(text, []).map(function (t) { return number(t, true); });
      }
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
      if (offGoal(control)) return;
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
      // One of no field, or of a field the chosen goal hides: above the form.
      if (!control || offGoal(control)) { general.push(item.message); return; }
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

  // Starting a run takes the server a while (it checks the settings against the corpus, then
  // the run's process loads the texts and each tokenizer before it records the run): the
  // page says so at once, and again each second once it has waited `LONG` seconds.
  var LONG = 3;
  var STARTING = 'Starting… the server is checking the settings against the corpus, then ' +
                 'loading its texts and tokenizers; this page moves to the run once it is recorded.';

  function starting(say) {
    var began = Date.now();
    say(STARTING);
    var timer = setInterval(function () {
      var waited = Math.round((Date.now() - began) / 1000);
      if (waited >= LONG) {
        say('Still starting, ' + waited + ' s so far: loading a corpus and its tokenizers ' +
            'can take a while; nothing is lost by waiting, and the page moves on by itself.');
      }
    }, 1000);
    return function () { clearInterval(timer); };
  }

  // Start a run of these settings (sent again with the same key, a retry starts nothing more)
  // and go to its page, or its place in the queue; `say` tells the person meanwhile.
  function startRun(settings, key, say) {
    var done = starting(say);
    return send('POST', '/api/runs', {headers: {'Content-Type': 'application/json',
                                                'Idempotency-Key': key}, body: settings})
      .then(function (answer) {
        done();
        var data = answer.data;
        say('Started: opening the run…');
        location.assign(data.run ? '/runs/' + data.run : '/queue/' + data.id);
      }, function (error) { done(); throw error; });
  }

  function newRun(form) {
    var sent = null, key = null;
    Array.prototype.forEach.call(form.querySelectorAll('input[name=goal]'), function (choice) {
      choice.addEventListener('change', function () { clearErrors(form); showGoal(form); });
    });
    showGoal(form);
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      clearErrors(form);
      var body = JSON.stringify(collect(form));
      if (body !== sent) { sent = body; key = newKey(); }
      startRun(body, key, function (text) { busy(form, text); })
        .catch(function (error) {
          busy(form, '');
          refused(form, error);
        });
    });
    ready(form.querySelector('button[type=submit]'));
  }

  // ---- The sample, from the runs page --------------------------------------------------
  // One click: the shipped sample corpus stored (as `analyzer ingest` with no path), then a
  // run of the page's settings for it (`page.sample`) started.
  function trySample(button) {
    var status = $('sample-status');
    function say(text) { show(status, text); }
    button.addEventListener('click', function () {
      button.disabled = true;
      show($('sample-error'), '');
      say('Storing the sample corpus…');
      send('POST', '/api/corpora/sample').then(function (answer) {
        var settings = Object.assign({corpus: answer.data.corpus.name}, page.sample);
        return startRun(JSON.stringify(settings), newKey(), say);
      }).catch(function (error) {
        say('');
        show($('sample-error'), error.message);
        button.disabled = false;
      });
    });
    ready(button);
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

  // A duration in words: 45 s, 3 min 20 s, 1 h 5 min.
  function duration(seconds) {
    var s = Math.max(0, Math.round(seconds));
    if (s < 60) return s + ' s';
    if (s < 3600) return Math.floor(s / 60) + ' min ' + (s % 60) + ' s';
    return Math.floor(s / 3600) + ' h ' + Math.floor((s % 3600) / 60) + ' min';
  }

  // The whole run first (jobs done of all, a bar, for how long it has run, the time left at
  // the rate seen so far), then each job's line in words, as the server writes them.
  function progressShown(overall) {
    if (!overall) {  // a run of another process (analyzer run): its progress is shown there
      $('overall-said').textContent = 'Running in another process (a command line\'s): its ' +
        'progress is shown where it runs; this page shows its report once it is complete.';
      $('overall-bar').hidden = $('times').hidden = true;
      return;
    }
    var holder = $('overall'), bar = $('overall-bar');
    bar.value = overall.share;
    holder.setAttribute('data-share', String(overall.share));
    holder.setAttribute('data-done', String(overall.done));
    holder.setAttribute('data-total', String(overall.total));
    $('overall-said').textContent = overall.done + ' of ' + overall.total + ' jobs done (' +
      Math.floor(overall.share * 100) + '%)';
    $('elapsed').textContent = 'running for ' + duration(overall.elapsed);
    $('left').textContent = overall.left === null ? 'time left: estimating…'
      : 'about ' + duration(overall.left) + ' left';
    var list = $('progress');
    list.textContent = '';
    overall.lines.forEach(function (line) {
      var item = element('li', line.said, 'stage-' + line.stage);
      item.setAttribute('data-label', line.label);
      list.appendChild(item);
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
      progressShown(data.overall);
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
  if ($('try-sample')) trySample($('try-sample'));
  if ($('watch')) watchRun();
  if ($('queued')) watchQueued();
})();
