// What every page's script shares (loaded before it): making elements, whose text is always
// set as text (textContent), never as HTML, and asking the API, whose refusals (RFC 9457
// problem documents) become Errors that carry the document.
var analyzer = (function () {
  'use strict';

  function element(tag, text, className) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (className) node.className = className;
    return node;
  }

  // fetch, then {data: the JSON body, changes: the Analyzer-Changes header}.
  function send(method, url, options) {
    return fetch(url, Object.assign({method: method, credentials: 'same-origin'}, options || {}))
      .then(function (response) {
        return response.text().then(function (text) {
          var data = null;
          try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
          if (!response.ok) {
            var error = new Error((data && (data.detail || data.title)) ||
                                  (response.status + ' ' + response.statusText));
            error.problem = data || {};
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
