// Code.gs under Node's test runner, with small fakes of the Apps Script services it uses.
// The answers come from the real API: tests/connectors/test_apps_script.py records them and runs
//   SIGNALS_APPS_SCRIPT_FIXTURES=<recorded.json> node --test connectors/apps_script/test/
// Without that variable the tests are skipped (run them through pytest).
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const vm = require('node:vm');

const FIXTURES = process.env.SIGNALS_APPS_SCRIPT_FIXTURES;
const skip = FIXTURES ? false : 'set SIGNALS_APPS_SCRIPT_FIXTURES (tests/connectors/test_apps_script.py does)';
const recorded = FIXTURES ? JSON.parse(fs.readFileSync(FIXTURES, 'utf8')) : {recordings: [], cases: [], keys: {}};
const SOURCE = fs.readFileSync(path.join(__dirname, '..', 'Code.gs'), 'utf8');

/** A fresh script: Code.gs loaded with fakes of UrlFetchApp, PropertiesService, CacheService,
 * Utilities and SpreadsheetApp. `fetches` lists every request it made. */
function load({key, url = recorded.api_url, prompts = []} = {}) {
  const fetches = [];
  const userProperties = new Map();
  if (key !== undefined) userProperties.set('SIGNALS_API_KEY', key);
  if (url !== undefined) userProperties.set('SIGNALS_API_URL', url);
  const cacheEntries = new Map();
  const alerts = [];
  const menus = [];
  const Properties = {
    getProperty: (name) => (userProperties.has(name) ? userProperties.get(name) : null),
    setProperty: (name, value) => { userProperties.set(name, String(value)); return Properties; },
    deleteProperty: (name) => { userProperties.delete(name); return Properties; },
  };
  const context = {
    UrlFetchApp: {
      fetch(requestUrl, options) {
        const headers = options.headers || {};
        const payload = options.payload === undefined ? null : JSON.parse(options.payload);
        const method = (options.method || 'get').toUpperCase();
        fetches.push({url: requestUrl, method, headers, payload, options});
        if (!requestUrl.startsWith(recorded.api_url)) throw new Error('DNS error: ' + requestUrl);
        const match = recorded.recordings.find((r) => r.method === method && r.url === requestUrl &&
          (r.authorization || undefined) === headers.Authorization && JSON.stringify(sorted(r.payload)) === JSON.stringify(sorted(payload)));
        if (!match) throw new Error(`no recorded answer for ${method} ${requestUrl} ${JSON.stringify(payload)}`);
        return {
          getResponseCode: () => match.status,
          getContentText: () => match.body,
          getAllHeaders: () => match.headers,
          getHeaders: () => match.headers,
        };
      },
    },
    PropertiesService: {getUserProperties: () => Properties},
    CacheService: {
      getUserCache: () => ({
        get: (k) => (cacheEntries.has(k) ? cacheEntries.get(k).value : null),
        put: (k, value, seconds) => {
          assert.ok(k.length <= 250, 'cache keys are at most 250 characters');
          assert.ok(typeof value === 'string' && value.length <= 100000, 'cache values are strings of at most 100 KB');
          assert.ok(Number.isInteger(seconds) && seconds >= 1 && seconds <= 21600, `cache seconds ${seconds}`);
          cacheEntries.set(k, {value, seconds});
        },
      }),
    },
    Utilities: {
      DigestAlgorithm: {SHA_256: 'sha256'},
      Charset: {UTF_8: 'utf8'},
      computeDigest: (algorithm, text) => Array.from(crypto.createHash(algorithm).update(text, 'utf8').digest())
        .map((b) => (b > 127 ? b - 256 : b)),  // Apps Script gives signed bytes
    },
    SpreadsheetApp: {
      getUi: () => ({
        ButtonSet: {OK_CANCEL: 'OK_CANCEL'},
        Button: {OK: 'OK', CANCEL: 'CANCEL'},
        createMenu(title) {
          const menu = {title, items: [], addItem(label, fn) { this.items.push([label, fn]); return this; },
            addToUi() { menus.push(this); }};
          return menu;
        },
        prompt: () => {
          const [button, text] = prompts.shift();
          return {getSelectedButton: () => button, getResponseText: () => text};
        },
        alert: (text) => { alerts.push(text); },
      }),
    },
  };
  vm.createContext(context);
  vm.runInContext(SOURCE, context, {filename: 'Code.gs'});
  return {script: context, fetches, userProperties, cacheEntries, alerts, menus};
}

function sorted(value) {
  if (Array.isArray(value)) return value.map(sorted);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.keys(value).sort().map((k) => [k, sorted(value[k])]));
  }
  return value;
}

function caseOf(name) {
  const found = recorded.cases.find((c) => c.case === name);
  assert.ok(found, `case ${name} was recorded`);
  return found;
}

function answerOf(name) {
  return JSON.parse(recorded.recordings.find((r) => r.case === name).body);
}

function run(name) {
  const c = caseOf(name);
  const loaded = load({key: recorded.keys[c.key]});
  let result;
  let error;
  try {
    result = loaded.script[c.function](...c.args);
  } catch (e) {
    error = e;
  }
  return {...loaded, result, error};
}

const TABLES = {
  top_keywords: 'keywords', defaults: 'keywords', keyword_timeseries: 'timeseries', domain_timeseries: 'timeseries',
  geo_heat: 'regions', trending: 'trending', keyword_activity: 'keywords', query: 'results',
};

for (const [name, field] of Object.entries(TABLES)) {
  test(`${name}: a header row, then the records; timestamps as dates`, {skip}, () => {
    const {result, error, fetches} = run(name);
    assert.equal(error, undefined, error && error.message);
    const records = answerOf(name)[field];
    assert.ok(records.length > 0);
    assert.deepEqual([...result[0]], Object.keys(records[0]));
    assert.equal(result.length, records.length + 1);
    records.forEach((record, i) => {
      Object.values(record).forEach((value, j) => {
        const cell = result[i + 1][j];
        if (typeof value === 'string' && /T\d\d:\d\d:\d\dZ$/.test(value)) {
          assert.ok(cell instanceof Date || Object.prototype.toString.call(cell) === '[object Date]');
          assert.equal(cell.toISOString().replace('.000Z', 'Z'), value);
        } else {
          assert.equal(cell, value);
        }
      });
    });
    assert.equal(fetches.length, 1);
    const headers = fetches[0].headers;
    assert.equal(headers.Authorization, 'Bearer ' + recorded.keys[caseOf(name).key]);
    assert.equal(headers.Accept, 'application/json');
    assert.match(headers['X-Signals-Client'], /^signals-apps-script\/\d+\.\d+\.\d+$/);
    assert.equal(fetches[0].options.muteHttpExceptions, true);
  });
}

test('compare and intervals: nested fields become columns with readable headers (as the Python connector\'s)', {skip}, () => {
  const {result, error, fetches} = run('compared');
  assert.equal(error, undefined, error && error.message);
  const record = answerOf('compared').regions[0];
  const header = [...result[0]];
  assert.deepEqual(header.slice(0, 5), ['geo_key', 'label', 'suppressions', 'unique_users', 'keyword_count']);
  assert.deepEqual(header.slice(5, 8), ['suppressions, previous period', 'unique_users, previous period',
    'keyword_count, previous period']);
  assert.deepEqual(header.slice(8, 10), ['suppressions, change %', 'suppressions, beyond noise']);
  assert.deepEqual(header.slice(-2), ['keyword_count, low (90 % interval)', 'keyword_count, high (90 % interval)']);
  assert.equal(result[1][header.indexOf('suppressions, previous period')], record.previous.suppressions);
  assert.equal(result[1][header.indexOf('suppressions, change %')], record.change.suppressions.pct === null ? '' :
    record.change.suppressions.pct);
  assert.equal(result[1][header.indexOf('suppressions, high (90 % interval)')], record.intervals.suppressions[1]);
  assert.match(fetches[0].url, /compare=previous_period&intervals=true$/);
  // the headings' words are the served document's (x-signals-columns), read without the key
  assert.equal(fetches[1].url, recorded.api_url + '/api/v1/openapi');
  assert.equal(fetches[1].headers.Authorization, undefined);
});

test('a query with as_of and intervals sends them in its body (TRUE from the sheet as true)', {skip}, () => {
  const {error, fetches} = run('dated_query');
  assert.equal(error, undefined, error && error.message);
  const body = JSON.parse(fetches[0].options.payload);
  assert.equal(body.as_of, '2026-03-09T12:00:00Z');
  assert.strictEqual(body.intervals, true);
});

test('the query function sends its JSON body, with group_by and filters read from text', {skip}, () => {
  const {fetches} = run('query');
  assert.equal(fetches[0].method, 'POST');
  assert.equal(fetches[0].options.contentType, 'application/json');
  assert.deepEqual(sorted(fetches[0].payload), sorted({window: '7d', bucket: 'day', limit: 5,
    group_by: ['country', 'time'], filters: {countries: ['US']}}));
});

test('empty arguments are left out: the API\'s defaults apply', {skip}, () => {
  const {fetches} = run('defaults');
  assert.equal(fetches[0].url, recorded.api_url + '/api/v1/signals/top-keywords');
  const trending = run('trending').fetches[0].url;
  assert.equal(trending, recorded.api_url + '/api/v1/signals/trending?window=24h&limit=10&min_baseline=5');
});

test('answers are cached until the next as_of', {skip}, () => {
  const c = caseOf('top_keywords');
  const loaded = load({key: recorded.keys[c.key]});
  const first = loaded.script.SIGNALS_TOP_KEYWORDS(...c.args);
  const second = loaded.script.SIGNALS_TOP_KEYWORDS(...c.args);
  assert.deepEqual(JSON.stringify(second), JSON.stringify(first));
  assert.equal(loaded.fetches.length, 1);
  const [entry] = [...loaded.cacheEntries.values()];
  const headers = recorded.recordings.find((r) => r.case === 'top_keywords').headers;
  assert.equal(entry.seconds, Number(/max-age=(\d+)/.exec(headers['cache-control'])[1]));
  assert.equal(entry.seconds, 3600 - (34 * 60 + 56));  // the fixture's clock: 12:34:56, as_of moves at 13:00
  for (const key of loaded.cacheEntries.keys()) assert.ok(!key.includes(recorded.keys.analyst), 'no key in a cache key');
});

test('a bad parameter shows the API\'s own words', {skip}, () => {
  const {error, cacheEntries} = run('bad_parameter');
  assert.equal(error.message, 'limit: 0 is out of bounds; expected an integer from 1 to 500');
  assert.equal(cacheEntries.size, 0, 'errors are not cached');
});

test('a wrong key says so and where to set it', {skip}, () => {
  const {error} = run('wrong_key');
  assert.match(error.message, /^Signals API key refused: The API key is not valid: .*GET \/api\/v1\/account.* Use the menu Signals → Set API key…$/);
});

test('a plan below the endpoint\'s: "Plan Observer cannot call /query"', {skip}, () => {
  const {error, fetches} = run('plan');
  assert.equal(error.message, 'Plan Observer cannot call /query');
  assert.deepEqual(fetches.map((f) => f.url), [recorded.api_url + '/api/v1/signals/query', recorded.api_url + '/api/v1/account']);
});

test('rate limited: "Rate limited, retry in N s" from Retry-After', {skip}, () => {
  const {error} = run('rate_limited');
  const retryAfter = recorded.recordings.find((r) => r.case === 'rate_limited').headers['retry-after'];
  assert.ok(Number(retryAfter) >= 1);
  assert.equal(error.message, `Rate limited, retry in ${retryAfter} s`);
});

test('no key or no address: the cell says which menu item to use', {skip}, () => {
  assert.throws(() => load({}).script.SIGNALS_GEO_HEAT('24h'), /^Error: No Signals API key: use the menu Signals → Set API key…$/);
  assert.throws(() => load({key: 'k', url: null}).script.SIGNALS_GEO_HEAT('24h'), /No Signals API address/);
  const unreachable = load({key: 'k', url: 'https://nowhere.test'});
  assert.throws(() => unreachable.script.SIGNALS_GEO_HEAT('24h'), /^Error: Cannot reach the Signals API at https:\/\/nowhere\.test: DNS error/);
});

test('bad filters text is refused before any request', {skip}, () => {
  const loaded = load({key: recorded.keys.analyst});
  assert.throws(() => loaded.script.SIGNALS_QUERY('7d', '', '', 'countries US'), /filters: write key=value/);
  assert.throws(() => loaded.script.SIGNALS_QUERY('7d', '', '', '{"countries": [US]}'), /filters: not valid JSON/);
  assert.equal(loaded.fetches.length, 0);
});

test('the menu stores the key in the user properties, never in the sheet', {skip}, () => {
  const loaded = load({key: undefined, prompts: [['OK', '  sig_live_new  '], ['OK', 'https://api.example.com/'],
    ['CANCEL', 'ignored'], ['OK', '']]});
  loaded.script.onOpen();
  assert.deepEqual(loaded.menus[0].items.map((i) => i[1]), ['signalsSetKey', 'signalsSetUrl', 'signalsShowPlan']);
  loaded.script.signalsSetKey();
  assert.equal(loaded.userProperties.get('SIGNALS_API_KEY'), 'sig_live_new');
  loaded.script.signalsSetUrl();
  assert.equal(loaded.userProperties.get('SIGNALS_API_URL'), 'https://api.example.com');
  loaded.script.signalsSetKey();  // cancelled: unchanged
  assert.equal(loaded.userProperties.get('SIGNALS_API_KEY'), 'sig_live_new');
  loaded.script.signalsSetKey();  // empty: removed
  assert.equal(loaded.userProperties.has('SIGNALS_API_KEY'), false);
});

test('"Show my plan" reads GET /api/v1/account', {skip}, () => {
  const loaded = load({key: recorded.keys.analyst});
  loaded.script.signalsShowPlan();
  assert.match(loaded.alerts[0], /^Subscription test-analyst-\w+: plan Analyst, 120 requests a minute, key sig_live_\w+…$/);
});
