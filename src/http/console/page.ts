/**
 * The console page, its script and its style, served as stored text (no build step, no inline
 * script). The script renders everything with `textContent` and `createElement`, never as HTML:
 * event data is partner input (issue 16: "escaping everything it renders").
 * The API key an operator types is kept in `sessionStorage` (gone with the tab) and sent as
 * `Authorization: Bearer …` on every request, like any API client.
 */

export const CONSOLE_HTML = String.raw`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ce-gateway console</title>
<link rel="icon" href="/console/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/console/app.css">
<script src="/console/app.js" defer></script>
</head>
<body>
<header>
  <h1>ce-gateway console</h1>
  <form id="key-form"><label>API key <input id="key" type="password" autocomplete="off" placeholder="admin key (empty without auth)"></label> <button type="submit">use</button></form>
  <p id="status" role="status"></p>
</header>
<main>
  <section id="kinds-section"><h2>Event kinds</h2><table id="kinds"><thead><tr><th>name</th><th>eventId</th><th>topic</th><th>owner</th></tr></thead><tbody></tbody></table></section>
  <section id="subscriptions-section"><h2>Subscriptions</h2><p class="hint">lag (records not yet delivered) over time, refreshed every 2 s</p><div id="subscriptions"></div></section>
  <section id="deadletters-section"><h2>Dead letters</h2>
    <form id="dl-form"><label>subscription <select id="dl-subscription"></select></label> <button type="submit">list</button> <button type="button" id="dl-redrive-all">redrive all</button></form>
    <table id="deadletters"><thead><tr><th>id</th><th>source</th><th>reason</th><th>status</th><th>attempts</th><th>data</th><th></th></tr></thead><tbody></tbody></table>
  </section>
  <section id="tail-section"><h2>Live tail</h2>
    <form id="tail-form"><label>subscription <select id="tail-subscription"></select></label> <button type="submit">start</button> <button type="button" id="tail-stop">stop</button></form>
    <ol id="tail"></ol>
  </section>
  <section id="chain-section"><h2>Correlation chain</h2>
    <form id="chain-form"><label>correlationid <input id="correlationid" size="40"></label> <button type="submit">show</button></form>
    <p id="chain-note"></p>
    <div id="chain"></div>
  </section>
</main>
</body>
</html>
`;

export const CONSOLE_CSS = String.raw`
body { font: 14px/1.4 system-ui, sans-serif; margin: 0 1.5rem 2rem; color: #1d2330; }
header { display: flex; flex-wrap: wrap; gap: 1rem; align-items: baseline; border-bottom: 1px solid #ccd; }
h1 { font-size: 1.3rem; } h2 { font-size: 1.1rem; margin-top: 1.5rem; }
table { border-collapse: collapse; width: 100%; } th, td { text-align: left; padding: 2px 8px; border-bottom: 1px solid #e3e6ef; vertical-align: top; }
td.data, .event-data { font-family: ui-monospace, monospace; white-space: pre-wrap; word-break: break-all; max-width: 40rem; }
.subscription { display: inline-block; margin: 0 1rem 1rem 0; padding: .5rem; border: 1px solid #dde; border-radius: 6px; }
.subscription svg { display: block; background: #f7f8fb; }
.lag-line { fill: none; stroke: #3461d1; stroke-width: 2; }
.hint { color: #667; } #status.error, .error { color: #b00020; }
#chain ul { list-style: none; padding-left: 1.2rem; border-left: 1px dashed #aab; } #chain > ul { border-left: none; padding-left: 0; }
.node { margin: .25rem 0; } .node-title { font-weight: 600; }
#tail li { font-family: ui-monospace, monospace; white-space: pre-wrap; word-break: break-all; }
`;

export const CONSOLE_JS = String.raw`'use strict';
(function () {
  var KEY = 'ce-gateway.console.key';
  var MAX_POINTS = 60;
  var lagHistory = new Map();
  var tailAbort = null;
  var $ = function (id) { return document.getElementById(id); };

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    // A missing value renders as nothing and anything else that is not a node as its text: a throw
    // in appendChild would leave a whole list empty because of one odd item.
    (children || []).forEach(function (c) {
      if (c === undefined || c === null) return;
      e.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
    });
    return e;
  }
  function svg(tag, attrs) {
    var e = document.createElementNS('http://www.w3.org/2000/svg', tag);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, String(attrs[k])); });
    return e;
  }
  function say(text, isError) { var s = $('status'); s.textContent = text; s.className = isError ? 'error' : ''; }
  function headers(extra) {
    var h = Object.assign({ accept: 'application/json' }, extra || {});
    var key = sessionStorage.getItem(KEY);
    if (key) h.authorization = 'Bearer ' + key;
    return h;
  }
  // The error of an answer that is not ok: the problem's detail (or title) when the body is one,
  // else the status with the start of the body. A proxy's HTML error page in front of the gateway
  // (a 502) said "Unexpected token '<'", and a refused tail said only "HTTP 429".
  function problemOf(res, text) {
    var body = null;
    try { body = text === '' ? null : JSON.parse(text); } catch (e) { body = null; }
    var said = body && typeof body === 'object' && (body.detail || body.title);
    var err = new Error(said ? String(said) : 'HTTP ' + res.status + (res.statusText ? ' ' + res.statusText : '') + (text.trim() === '' ? '' : ': ' + text.trim().slice(0, 200)));
    err.status = res.status;
    return err;
  }
  function api(path, init) {
    init = init || {};
    return fetch(path, Object.assign({}, init, { headers: headers(init.headers) })).then(function (res) {
      return res.text().then(function (text) {
        if (!res.ok) throw problemOf(res, text);
        return text === '' ? null : JSON.parse(text);
      });
    });
  }
  function fail(where) { return function (err) { say(where + ': ' + err.message, true); }; }
  function replaceRows(tbody, rows) { while (tbody.firstChild) tbody.removeChild(tbody.firstChild); rows.forEach(function (r) { tbody.appendChild(r); }); }
  function json(v) { return JSON.stringify(v, null, 1); }

  function loadKinds() {
    return api('/catalog').then(function (c) {
      replaceRows($('kinds').tBodies[0], c.kinds.map(function (k) {
        return el('tr', {}, [el('td', {}, [k.name]), el('td', {}, [k.eventId]), el('td', {}, [k.topic]), el('td', {}, [String(k.owner || '')])]);
      }));
    });
  }

  // An admin's GET /subscriptions lists every owner's, and two owners may each have an "orders":
  // a subscription is its owner and name together (the key of its option, card and lag history),
  // and every request about one names its owner with ?owner= (a partner's own id is accepted for
  // its own subscriptions, so this is the same for everyone). Owners and names are
  // [A-Za-z0-9_-]: the first '/' of a key separates them.
  function keyOf(s) { return (s.owner || '') + '/' + s.name; }
  function labelOf(s) { return s.owner ? s.owner + ' / ' + s.name : s.name; }
  function fromKey(key) {
    var i = key.indexOf('/');
    return i < 0 ? null : { owner: key.slice(0, i), name: key.slice(i + 1) };
  }
  function subscriptionPath(s, rest, query) {
    var q = (s.owner ? ['owner=' + encodeURIComponent(s.owner)] : []).concat(query ? [query] : []);
    return '/subscriptions/' + encodeURIComponent(s.name) + (rest || '') + (q.length ? '?' + q.join('&') : '');
  }

  var subscriptions = [];
  function loadSubscriptions() {
    return api('/subscriptions').then(function (s) {
      subscriptions = s.items;
      ['dl-subscription', 'tail-subscription'].forEach(function (id) {
        var sel = $(id), current = sel.value;
        while (sel.firstChild) sel.removeChild(sel.firstChild);
        subscriptions.forEach(function (x) { sel.appendChild(el('option', { value: keyOf(x) }, [labelOf(x)])); });
        if (current) sel.value = current;
      });
      drawSubscriptions();
    });
  }

  function totalLag(status) {
    var lag = status && status.lag;
    var sum = 0;
    var add = function (v) { if (typeof v === 'number') sum += v; else if (v && typeof v === 'object') Object.keys(v).forEach(function (k) { add(v[k]); }); };
    if (status && typeof status.totalLag === 'number') return status.totalLag;
    if (lag && typeof lag.total === 'number') return lag.total; // GET …/status: { lag: { total, partitions } }
    add(lag);
    return sum;
  }

  function pollLag() {
    return Promise.all(subscriptions.map(function (s) {
      return api(subscriptionPath(s, '/status')).then(function (st) {
        var h = lagHistory.get(keyOf(s)) || [];
        h.push({ at: Date.now(), lag: totalLag(st) });
        while (h.length > MAX_POINTS) h.shift();
        lagHistory.set(keyOf(s), h);
      }, function () { /* status unavailable for this one: its chart says so */ });
    })).then(drawSubscriptions);
  }

  function chart(points) {
    var w = 260, h = 80, pad = 4;
    var box = svg('svg', { width: w, height: h, viewBox: '0 0 ' + w + ' ' + h, role: 'img', 'class': 'lag-chart' });
    if (points.length === 0) return box;
    var max = Math.max(1, Math.max.apply(null, points.map(function (p) { return p.lag; })));
    var step = (w - 2 * pad) / Math.max(1, MAX_POINTS - 1);
    var coords = points.map(function (p, i) { return (pad + i * step).toFixed(1) + ',' + (h - pad - (p.lag / max) * (h - 2 * pad)).toFixed(1); });
    box.appendChild(svg('polyline', { 'class': 'lag-line', points: coords.join(' ') }));
    var label = svg('text', { x: w - pad, y: 12, 'text-anchor': 'end', 'font-size': 11 });
    label.textContent = 'lag ' + points[points.length - 1].lag + ' (max ' + max + ')';
    box.appendChild(label);
    return box;
  }

  function drawSubscriptions() {
    var box = $('subscriptions');
    while (box.firstChild) box.removeChild(box.firstChild);
    subscriptions.forEach(function (s) {
      var points = lagHistory.get(keyOf(s)) || [];
      var card = el('div', { 'class': 'subscription', 'data-name': s.name, 'data-owner': s.owner || '' }, [
        // A connector file's (a shell hook, a file drop, or a subscription declared there) says which file.
        el('div', { 'class': 'node-title' }, [labelOf(s) + ' (' + s.state + ', ' + (s.delivery && s.delivery.mode) + (s.connector ? ', connector ' + s.connector.name : '') + ')']),
        el('div', { 'class': 'hint' }, ['kinds: ' + s.kinds.join(', ')]),
      ]);
      card.appendChild(points.length === 0 ? el('div', { 'class': 'hint' }, ['no status yet']) : chart(points));
      box.appendChild(card);
    });
  }

  // The data cell of a dead letter. One whose event cannot be decoded (a poison record, a kind
  // its owner may no longer read) comes with event: null and an eventProblem, often without
  // data: its row says why rather than leaving the cell (and, thrown, the whole table) empty.
  function deadLetterData(d) {
    if (d.event) {
      if (d.event.data !== undefined) return JSON.stringify(d.event.data);
      if (d.event.data_base64 !== undefined) return 'base64: ' + d.event.data_base64;
      return '(no data)';
    }
    if (d.data !== undefined) return JSON.stringify(d.data);
    return 'unreadable: ' + (d.eventProblem || 'the event could not be decoded');
  }

  function redriveDeadLetters(sub, selection) {
    return api(subscriptionPath(sub, '/deadletters/redrive'), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(selection) });
  }

  function listDeadLetters() {
    var sub = fromKey($('dl-subscription').value);
    if (!sub) return Promise.resolve();
    // One catch for the request and the rendering: an item the rows cannot show is an error in
    // the status line, not an empty table under "loaded".
    return api(subscriptionPath(sub, '/deadletters', 'limit=100')).then(function (page) {
      replaceRows($('deadletters').tBodies[0], page.items.map(function (d) {
        var redrive = el('button', { type: 'button' }, ['redrive']);
        redrive.addEventListener('click', function () {
          // The row's own coordinates on the dead-letter topic name exactly this dead letter, also one
          // that is not a readable event (id and source null); { events: [{ source, id }] } would
          // also take the event's other dead letters, and { ids } every source's event with this id.
          var at = d.deadLetter.partition + '@' + d.deadLetter.offset;
          redriveDeadLetters(sub, { deadLetters: [{ partition: d.deadLetter.partition, offset: d.deadLetter.offset }] }).then(function (r) {
            var skipped = r && r.skipped && r.skipped[0];
            var said = skipped ? 'not redriven: ' + at + ': ' + skipped.reason : 'redriven: ' + at + (d.id == null ? '' : ' (' + d.id + ' from ' + d.source + ')');
            // Said after the listing is redrawn (which says how many it shows), unless that failed.
            return listDeadLetters().then(function () { if ($('status').className !== 'error') say(said); });
          }, fail('redrive'));
        });
        return el('tr', {}, [el('td', {}, [String(d.id)]), el('td', {}, [String(d.source)]), el('td', {}, [String(d.reason)]), el('td', {}, [String(d.lastStatus == null ? '' : d.lastStatus)]),
          el('td', {}, [String(d.attempts == null ? '' : d.attempts)]), el('td', { 'class': 'data' }, [deadLetterData(d)]), el('td', {}, [redrive])]);
      }));
      say(page.items.length + ' dead letters of ' + labelOf(sub));
    }).catch(fail('dead letters'));
  }

  function startTail(again) {
    stopTail();
    var key = $('tail-subscription').value, sub = fromKey(key);
    if (!sub) return;
    var list = $('tail');
    if (!again) while (list.firstChild) list.removeChild(list.firstChild);
    var mine = tailAbort = new AbortController();
    fetch('/console/api/tail/' + encodeURIComponent(sub.name) + (sub.owner ? '?owner=' + encodeURIComponent(sub.owner) : ''), { headers: headers({ accept: 'text/event-stream' }), signal: tailAbort.signal }).then(function (res) {
      if (!res.ok) return res.text().then(function (text) { throw problemOf(res, text); });
      say('tailing ' + labelOf(sub));
      list.setAttribute('data-tailing', key);
      var reader = res.body.getReader(), decoder = new TextDecoder(), buffer = '', failed = false;
      function pump() {
        return reader.read().then(function (r) {
          // The gateway ends a tail after its lifetime (10 min by default): tail again, keeping the list.
          // After a failure it said (event: error), later: the reason stays on the status line a while.
          if (r.done) {
            if (tailAbort === mine) setTimeout(function () { if (tailAbort === mine) startTail(true); }, failed ? 5000 : 1000);
            return;
          }
          buffer += decoder.decode(r.value, { stream: true });
          var parts = buffer.split('\n\n');
          buffer = parts.pop();
          parts.forEach(function (msg) {
            var lines = msg.split('\n');
            var data = lines.filter(function (l) { return l.indexOf('data: ') === 0; }).map(function (l) { return l.slice(6); }).join('\n');
            if (!data) return;
            if (lines.indexOf('event: error') !== -1) {
              var p = JSON.parse(data);
              failed = true;
              say('tail of ' + labelOf(sub) + ' ended: ' + (p.detail || p.title) + ' (tailing again in 5 s)', true);
              return;
            }
            var item = JSON.parse(data);
            var text = item.valid
              ? (item.attributes.time || '-') + '  ' + (item.attributes.eventname || item.attributes.type) + '  id=' + item.attributes.id + '  correlationid=' + (item.attributes.correlationid || '-') + '  ' + JSON.stringify(item.data)
              : 'INVALID ' + item.topic + '/' + item.partition + '@' + item.offset + ': ' + item.reason;
            list.insertBefore(el('li', {}, [text]), list.firstChild);
            while (list.children.length > 200) list.removeChild(list.lastChild);
          });
          return pump();
        });
      }
      return pump();
    }).catch(function (err) { if (err.name !== 'AbortError') say('tail: ' + err.message, true); });
  }
  function stopTail() { if (tailAbort) { tailAbort.abort(); tailAbort = null; } }
  // The stop button: the status line said "tailing …" on after the tail had stopped.
  function stopTailByHand() {
    var list = $('tail'), key = list.getAttribute('data-tailing'), sub = key && fromKey(key);
    var was = tailAbort !== null;
    stopTail();
    list.removeAttribute('data-tailing');
    if (was) say('tail stopped' + (sub ? ': ' + labelOf(sub) : ''));
  }

  function node(n) {
    var title = el('div', { 'class': 'node-title' }, [(n.name || n.type) + '  ' + n.id]);
    var cut = n.causationCycle ? '  (causation cycle: caused by ' + n.causationid + ', which it caused)' : n.depthCut ? '  (continues the chain under ' + n.causationid + ': cut to keep the tree shallow)' : '';
    var meta = el('div', { 'class': 'hint' }, [(n.time || '-') + '  source=' + n.source + '  ' + n.topic + '/' + n.partition + '@' + n.offset + cut]);
    var data = el('div', { 'class': 'event-data' }, [json(n.data)]);
    var li = el('li', { 'class': 'node', 'data-id': n.id }, [title, meta, data]);
    if (n.children.length > 0) li.appendChild(el('ul', {}, n.children.map(node)));
    return li;
  }
  function showChain() {
    var id = $('correlationid').value.trim();
    if (!id) return Promise.resolve();
    $('chain-note').textContent = 'reading…';
    return api('/console/api/trace/' + encodeURIComponent(id)).then(function (c) {
      var box = $('chain');
      while (box.firstChild) box.removeChild(box.firstChild);
      box.appendChild(el('ul', {}, c.roots.map(node)));
      $('chain-note').textContent = (c.complete ? '' : 'the read was cut by its time limit: the chain may be incomplete. ') + (c.invalid.length ? c.invalid.length + ' invalid records. ' : '') + (c.roots.length ? '' : 'no events with this correlationid.');
    }, function (err) { $('chain-note').textContent = ''; fail('chain')(err); });
  }

  // Runs round every ms, the next round only once the previous one has settled: an admin's
  // many subscriptions, each asked for its status, must not pile up rounds on a slow gateway.
  function every(ms, round) {
    function next() { Promise.resolve().then(round).catch(function () {}).then(function () { setTimeout(next, ms); }); }
    setTimeout(next, ms);
  }

  function refresh() { return Promise.all([loadKinds(), loadSubscriptions()]).then(function () { say('loaded'); }, fail('load')); }

  document.addEventListener('DOMContentLoaded', function () {
    $('key').value = sessionStorage.getItem(KEY) || '';
    $('key-form').addEventListener('submit', function (e) { e.preventDefault(); sessionStorage.setItem(KEY, $('key').value); refresh(); });
    $('dl-form').addEventListener('submit', function (e) { e.preventDefault(); listDeadLetters(); });
    $('dl-redrive-all').addEventListener('click', function () {
      var sub = fromKey($('dl-subscription').value);
      if (sub) redriveDeadLetters(sub, { all: true }).then(listDeadLetters, fail('redrive'));
    });
    $('tail-form').addEventListener('submit', function (e) { e.preventDefault(); startTail(); });
    $('tail-stop').addEventListener('click', stopTailByHand);
    $('chain-form').addEventListener('submit', function (e) { e.preventDefault(); showChain(); });
    refresh();
    every(2000, function () { return subscriptions.length > 0 ? pollLag().catch(fail('lag')) : null; });
    every(15000, function () { return loadSubscriptions().catch(function () {}); });
  });
})();
`;

/**
 * The page's icon. Without one a browser asks for `/favicon.ico`, which the gateway answers 404
 * (401 with PARTNERS_FILE): an error in the browser's console on every load of the page, where an
 * operator looks when something does not work. A `data:` icon is refused by the page's own
 * Content-Security-Policy (`img-src 'self'`), so it is served from here.
 */
export const CONSOLE_ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#1f4e79"/><path d="M4 8h8M8 4l4 4-4 4" stroke="#fff" stroke-width="2" fill="none"/></svg>
`;
