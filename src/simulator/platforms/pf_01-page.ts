// The browser side of pf_01's simulated pages: the inline scripts their HTML shells run. The
// event page first gets a session (answers the page's challenge at api/session, see
// pf_01-protection.ts), then fetches the two data arms with its token (v2 seats, v1 resale and
// general admission), renders the merged seat map into #seat-map, and only then marks <body>
// ready, so nothing is readable without a real browser. The front page gets a session and asks
// the visitor's state with it (api/v1/visitor), as the platform's home page does. The token lives
// in the script's closure only, as a real page's does, and goes out on the page's own data
// requests: in a header, or in a cookie the script sets (the protection's `token_in`). Nothing is
// kept anywhere for a scraper to read.
// Kept as plain ES2020 text: it runs in Chromium, not in Node.
import { PF01_PROTOCOL, type ChallengeMode, type TokenCarrier } from './pf_01-protection.ts';

/**
 * The session step shared by both pages: `startSession()` resolves to the token or rejects, and
 * `tokenHeaders(token)` is what a data request adds for it (nothing when the token is a cookie:
 * the browser sends that along by itself).
 */
function sessionScript(mode: ChallengeMode, carrier: TokenCarrier, url: string): string {
  const { answerField, tokenHeader, tokenCookie } = PF01_PROTOCOL[mode];
  const keep =
    carrier === 'cookie'
      ? `
      document.cookie = ${JSON.stringify(`${tokenCookie}=`)} + data.token + '; path=/pf_01; SameSite=Lax';`
      : '';
  return `
  function startSession() {
    return Promise.resolve().then(function () {
      var answer = window.__pf01Challenge();
      return fetch(${JSON.stringify(url)}, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ ${answerField}: answer }),
      });
    }).then(function (res) {
      if (!res.ok) throw new Error('api/session answered ' + res.status);
      return res.json();
    }).then(function (data) {
      if (!data || typeof data.token !== 'string') throw new Error('api/session sent no token');${keep}
      return data.token;
    });
  }
  function tokenHeaders(token) {
    return ${carrier === 'cookie' ? '{}' : `{ ${JSON.stringify(tokenHeader)}: token }`};
  }
`;
}

/**
 * Runs on the event page. The DOM it leaves (read by the pf_01 adapter):
 *   body[data-state="ready"][data-arm-v1="ok|error"][data-arm-v2="ok|error"]
 *   #seat-map > section.map-section[data-section]
 *     .seat[data-row][data-seat][data-offer="standard|platinum"][data-price][flags]   (v2)
 *     .primary-count[data-offer][data-available][data-price]                         (v1)
 *     .resale-listing[data-listing-id][data-price][data-quantity][flags]             (v1)
 *     .ga-offer[data-price][data-available][flags]                                   (v1)
 * where [flags] is data-restricted-view, data-accessible, data-presale ("true"/"false").
 * Without a session the arms are not asked for: both are marked error, as when both fail.
 */
export function eventPageScript(mode: ChallengeMode, carrier: TokenCarrier = 'header'): string {
  return `
(function () {
  'use strict';
  var body = document.body;
  var header = document.getElementById('event');
  var map = document.getElementById('seat-map');
  var key = header.getAttribute('data-event-id');
  var currency = header.getAttribute('data-currency') || 'EUR';
  var region = new URLSearchParams(location.search).get('region') || '';
  var money = new Intl.NumberFormat('en', { style: 'currency', currency: currency });
${sessionScript(mode, carrier, '../api/session')}
  function load(path, token) {
    var url = '../api/' + path + '?region=' + encodeURIComponent(region);
    var headers = tokenHeaders(token);
    headers.accept = 'application/json';
    return fetch(url, { headers: headers }).then(function (res) {
      if (!res.ok) throw new Error(url + ' answered ' + res.status);
      return res.json();
    }).then(function (data) {
      if (!data || !Array.isArray(data.sections)) throw new Error(url + ' sent no sections');
      return data;
    });
  }

  var sections = new Map();
  function section(name) {
    var el = sections.get(name);
    if (el) return el;
    el = document.createElement('section');
    el.className = 'map-section';
    el.setAttribute('data-section', name);
    var title = document.createElement('h2');
    title.textContent = name;
    el.appendChild(title);
    map.appendChild(el);
    sections.set(name, el);
    return el;
  }
  function list(parent, className) {
    var el = parent.querySelector('.' + className);
    if (!el) {
      el = document.createElement('ul');
      el.className = className;
      parent.appendChild(el);
    }
    return el;
  }
  function decimal(cents) {
    return (cents / 100).toFixed(2);
  }
  function flags(el, item) {
    el.setAttribute('data-restricted-view', String(!!item.restricted_view));
    el.setAttribute('data-accessible', String(!!item.accessible));
    el.setAttribute('data-presale', String(!!item.presale));
  }
  function notice(text) {
    var p = document.createElement('p');
    p.className = 'notice';
    p.textContent = text;
    map.parentNode.insertBefore(p, map);
  }

  function renderSeats(data) {
    data.sections.forEach(function (s) {
      var el = section(s.name);
      var rows = document.createElement('div');
      rows.className = 'seat-rows';
      s.rows.forEach(function (r) {
        var row = document.createElement('div');
        row.className = 'seat-row';
        row.setAttribute('data-row', r.row);
        r.seats.forEach(function (seat) {
          var b = document.createElement('button');
          b.className = 'seat';
          b.setAttribute('data-row', r.row);
          b.setAttribute('data-seat', seat.number);
          b.setAttribute('data-offer', String(seat.offer_type).toLowerCase());
          b.setAttribute('data-price', decimal(seat.price_cents));
          flags(b, seat);
          b.title = 'Row ' + r.row + ', seat ' + seat.number + ': ' + money.format(seat.price_cents / 100);
          b.textContent = seat.number;
          row.appendChild(b);
        });
        rows.appendChild(row);
      });
      el.appendChild(rows);
    });
  }

  function renderAvailability(data) {
    data.sections.forEach(function (s) {
      var el = section(s.name);
      s.primary.forEach(function (p) {
        var li = document.createElement('li');
        li.className = 'primary-count';
        li.setAttribute('data-offer', String(p.offer_type).toLowerCase());
        li.setAttribute('data-available', String(p.available));
        li.setAttribute('data-price', decimal(p.price_cents));
        li.textContent = p.available + ' at ' + money.format(p.price_cents / 100);
        list(el, 'availability').appendChild(li);
      });
      s.resale.forEach(function (r) {
        var li = document.createElement('li');
        li.className = 'resale-listing';
        li.setAttribute('data-listing-id', r.listing_id);
        li.setAttribute('data-price', decimal(r.price_cents));
        li.setAttribute('data-quantity', String(r.quantity));
        flags(li, r);
        li.textContent = r.quantity + ' resale at ' + money.format(r.price_cents / 100);
        list(el, 'resale-listings').appendChild(li);
      });
      s.general_admission.forEach(function (g) {
        var li = document.createElement('li');
        li.className = 'ga-offer';
        li.setAttribute('data-price', decimal(g.price_cents));
        li.setAttribute('data-available', String(g.available));
        flags(li, g);
        li.textContent = g.available + ' standing at ' + money.format(g.price_cents / 100);
        list(el, 'ga-offers').appendChild(li);
      });
    });
  }

  // Both arms are awaited before anything is drawn, so the sections come out in one order
  // (the venue map's) whichever answer arrives first. Without a session neither is asked for.
  startSession().then(function (token) {
    return Promise.allSettled([
      load('v2/events/' + encodeURIComponent(key) + '/seats', token),
      load('v1/events/' + encodeURIComponent(key) + '/availability', token),
    ]);
  }, function () {
    var none = { status: 'rejected', reason: new Error('no session') };
    return [none, none];
  }).then(function (results) {
    var v2 = results[0];
    var v1 = results[1];
    var v2ok = false;
    var v1ok = false;
    try {
      if (v2.status === 'fulfilled') { renderSeats(v2.value); v2ok = true; }
    } catch (e) { /* drawn as unavailable below */ }
    try {
      if (v1.status === 'fulfilled') { renderAvailability(v1.value); v1ok = true; }
    } catch (e) { /* drawn as unavailable below */ }
    if (!v2ok) notice('Seat selection is unavailable right now.');
    if (!v1ok) notice('Resale and standing tickets are unavailable right now.');
    body.setAttribute('data-arm-v2', v2ok ? 'ok' : 'error');
    body.setAttribute('data-arm-v1', v1ok ? 'ok' : 'error');
    body.setAttribute('data-state', 'ready');
  });
})();
`;
}

/** The event page's script as the platform ships it normally. */
export const EVENT_PAGE_SCRIPT = eventPageScript('standard');

/**
 * Runs on the front page `/pf_01/`: gets a session, as a visitor's first page does, and with it
 * the visitor's state, which it shows.
 */
export function frontPageScript(mode: ChallengeMode, carrier: TokenCarrier = 'header'): string {
  return `
(function () {
  'use strict';
  var home = document.getElementById('home');
${sessionScript(mode, carrier, 'api/session')}
  function say(text) {
    var p = document.createElement('p');
    p.className = 'visitor';
    p.textContent = text;
    home.appendChild(p);
  }
  startSession().then(function (token) {
    var headers = tokenHeaders(token);
    headers.accept = 'application/json';
    return fetch('api/v1/visitor', { headers: headers });
  }).then(function (res) {
    if (!res.ok) throw new Error('api/v1/visitor answered ' + res.status);
    return res.json();
  }).then(function (visitor) {
    say(visitor && visitor.visitor === 'anonymous' ? 'Welcome! Sign in to see your tickets.' : 'Welcome back.');
  }).catch(function () {
    say('Something went wrong. Please reload the page.');
  });
})();
`;
}

export const FRONT_PAGE_SCRIPT = frontPageScript('standard');

/**
 * The script of the `malformed` variant: a half-shipped redesign that still says "ready" but
 * draws a section without a name and seats priced "TBA".
 */
export const MALFORMED_PAGE_SCRIPT = `
(function () {
  'use strict';
  setTimeout(function () {
    var map = document.getElementById('seat-map');
    var el = document.createElement('section');
    el.className = 'map-section';
    el.innerHTML = '<div class="seat-rows"><div class="seat-row"><button class="seat" data-row="?" data-seat="?" data-offer="standard" data-price="TBA">?</button></div></div>';
    map.appendChild(el);
    document.body.setAttribute('data-arm-v1', 'ok');
    document.body.setAttribute('data-arm-v2', 'ok');
    document.body.setAttribute('data-state', 'ready');
  }, 10);
})();
`;
