// The sign-in page. The token is sent by fetch, so that the answer's write key reaches this
// script, which keeps it in this origin's localStorage: a page of another port (another
// origin) cannot read it, though the browser sends it the session cookie. The pages' scripts
// send it with every write (common.js). Without a script the form posts itself, and the pages
// then read but cannot write. Signed out (or the session ended), the key is dropped.
(function () {
  'use strict';
  var KEY = 'analyzer-write-key';
  var form = document.getElementById('signin'), error = document.getElementById('signin-error');
  if (!form) return;

  function forget() {
    try { window.localStorage.removeItem(KEY); } catch (e) { /* storage off: nothing kept */ }
  }

  function say(text) {
    error.textContent = text;
    error.hidden = !text;
  }

  if (form.hasAttribute('data-forget')) forget();
  form.addEventListener('submit', function (event) {
    event.preventDefault();
    say('');
    fetch(form.getAttribute('action'), {
      method: 'POST', credentials: 'same-origin', headers: {'Accept': 'application/json'},
      body: new URLSearchParams(new FormData(form))
    }).then(function (response) {
      return response.json().then(function (data) { return {ok: response.ok, data: data}; });
    }).then(function (answer) {
      if (!answer.ok) { say(answer.data.detail || 'Not signed in.'); return; }
      forget();
      try {
        if (answer.data.write_key) window.localStorage.setItem(KEY, answer.data.write_key);
      } catch (e) {
        say('Signed in, but this browser keeps nothing for this site (its storage is off), so ' +
            'the pages will show the runs but cannot bring corpora or start runs.');
        var next = document.createElement('a');
        next.href = answer.data.next;
        next.textContent = 'Go on';
        error.appendChild(document.createTextNode(' ')).parentNode.appendChild(next);
        return;
      }
      window.location.replace(answer.data.next);
    }, function () { say('The server did not answer; try again.'); });
  });
})();
