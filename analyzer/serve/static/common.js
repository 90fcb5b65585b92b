// What every page's script shares (loaded before it): making elements, whose text is always
// set as text (textContent), never as HTML, and asking the API, whose refusals (RFC 9457
// problem documents) become Errors that carry the document and the status. Behind a token,
// every request that changes something carries the session's write key, which the sign-in
// page kept in this origin's storage (the session cookie alone only reads).
var analyzer = (function () {
  'use strict';

  function element(tag, text, className) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (className) node.className = className;
    return node;
  }

  var WRITE_KEY = 'analyzer-write-key', WRITE_KEY_HEADER = 'X-Analyzer-Write-Key';
  var SIGNED_OUT = 'Your session has ended (it expired, or was signed out in another tab): ' +
                   'sign in again at /login.';

  function writeKey() {
    try { return window.localStorage.getItem(WRITE_KEY); } catch (e) { return null; }
  }

  // fetch, then {data: the JSON body, changes: the Analyzer-Changes header}.
  function send(method, url, options) {
    options = Object.assign({method: method, credentials: 'same-origin'}, options || {});
    var key = method === 'GET' || method === 'HEAD' ? null : writeKey();
    if (key) {
      options.headers = Object.assign({}, options.headers || {});
      options.headers[WRITE_KEY_HEADER] = key;
    }
    return fetch(url, options)
      .then(function (response) {
        return response.text().then(function (text) {
          var data = null;
          try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
          if (!response.ok) {
            var error = new Error(response.status === 401 ? SIGNED_OUT :
                                  (data && (data.detail || data.title)) ||
                                  (response.status + ' ' + response.statusText));
            error.problem = data || {};
            error.status = response.status;
            throw error;
          }
          return {data: data, changes: response.headers.get('Analyzer-Changes')};
        });
      });
  }

  // A JSON request (`body` sent as JSON when given); its answer's body.
  function request(method, url, body) {
    var options = body === undefined ? {} : {headers: {'Content-Type': 'application/json'},
                                              body: JSON.stringify(body)};
    return send(method, url, options).then(function (answer) { return answer.data; });
  }

  return {element: element, send: send, request: request};
})();
