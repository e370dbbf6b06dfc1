// Code.gs and Reports.gs under Node's test runner, with small fakes of the Apps Script services they
// use (DataStudioApp's builders, UrlFetchApp, PropertiesService, CacheService, Utilities), the same
// harness as connectors/apps_script/test/. The answers come from the real API:
// tests/connectors/test_looker_studio.py records them and runs
//   SIGNALS_LOOKER_FIXTURES=<recorded.json> node --test connectors/looker_studio/test/
// Without that variable the tests are skipped (run them through pytest).
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const vm = require('node:vm');

const FIXTURES = process.env.SIGNALS_LOOKER_FIXTURES;
const skip = FIXTURES ? false : 'set SIGNALS_LOOKER_FIXTURES (tests/connectors/test_looker_studio.py does)';
const recorded = FIXTURES ? JSON.parse(fs.readFileSync(FIXTURES, 'utf8'))
  : {recordings: [], cases: [], keys: {}, api_url: 'https://signals.test', now: '2026-03-10T12:34:56Z'};
const HERE = path.join(__dirname, '..');
const SOURCES = ['Reports.gs', 'Code.gs'].map((name) => [name, fs.readFileSync(path.join(HERE, name), 'utf8')]);

// The enums as Apps Script's DataStudioApp lists them (developers.google.com/apps-script/reference/data-studio).
const FIELD_TYPES = ['YEAR', 'YEAR_QUARTER', 'YEAR_MONTH', 'YEAR_WEEK', 'YEAR_MONTH_DAY', 'YEAR_MONTH_DAY_HOUR',
  'YEAR_MONTH_DAY_MINUTE', 'YEAR_MONTH_DAY_SECOND', 'QUARTER', 'MONTH', 'WEEK', 'MONTH_DAY', 'DAY_OF_WEEK', 'DAY',
  'HOUR', 'MINUTE', 'DURATION', 'COUNTRY', 'COUNTRY_CODE', 'CONTINENT', 'CONTINENT_CODE', 'SUB_CONTINENT',
  'SUB_CONTINENT_CODE', 'REGION', 'REGION_CODE', 'CITY', 'CITY_CODE', 'METRO', 'METRO_CODE', 'LATITUDE_LONGITUDE',
  'NUMBER', 'PERCENT', 'TEXT', 'BOOLEAN', 'URL', 'HYPERLINK', 'IMAGE', 'IMAGELINK'];
const AGGREGATIONS = ['AVG', 'COUNT', 'COUNT_DISTINCT', 'MAX', 'MIN', 'SUM', 'AUTO'];
const AUTH_TYPES = ['NONE', 'OAUTH2', 'KEY', 'USER_PASS', 'USER_TOKEN', 'PATH_USER_PASS', 'PATH_KEY'];
const enumOf = (names) => Object.fromEntries(names.map((n) => [n, n]));

/** A builder whose setX(value) calls record x: value (and return the builder). */
function builder(target, methods) {
  const b = {};
  methods.forEach((m) => {
    b[m] = (value) => {
      target[m.charAt(3).toLowerCase() + m.slice(4)] = value;
      return b;
    };
  });
  return b;
}

function dataStudio(log) {
  return {
    createCommunityConnector: () => ({
      AuthType: enumOf(AUTH_TYPES),
      FieldType: enumOf(FIELD_TYPES),
      AggregationType: enumOf(AGGREGATIONS),
      newAuthTypeResponse() {
        const out = {};
        const b = builder(out, ['setAuthType', 'setHelpUrl']);
        b.build = () => {
          assert.ok(AUTH_TYPES.includes(out.authType), `auth type ${out.authType}`);
          return out.helpUrl === undefined ? {type: out.authType} : {type: out.authType, helpUrl: out.helpUrl};
        };
        return b;
      },
      getConfig() {
        const entries = [];
        const config = {isSteppedConfig: false, dateRangeRequired: false};
        const entry = (kind) => {
          const out = {kind, options: []};
          entries.push(out);
          const b = builder(out, ['setId', 'setName', 'setHelpText', 'setText', 'setPlaceholder', 'setAllowOverride',
            'setIsDynamic']);
          b.addOption = (option) => { out.options.push(option.built); return b; };
          return b;
        };
        return {
          newInfo: () => entry('INFO'),
          newSelectSingle: () => entry('SELECT_SINGLE'),
          newSelectMultiple: () => entry('SELECT_MULTIPLE'),
          newTextInput: () => entry('TEXTINPUT'),
          newTextArea: () => entry('TEXTAREA'),
          newCheckbox: () => entry('CHECKBOX'),
          newOptionBuilder() {
            const built = {};
            const b = builder(built, ['setLabel', 'setValue']);
            b.built = built;
            return b;
          },
          setIsSteppedConfig(value) { config.isSteppedConfig = value; return this; },
          setDateRangeRequired(value) { config.dateRangeRequired = value; return this; },
          build() {
            const ids = entries.map((e) => e.id);
            assert.equal(new Set(ids).size, ids.length, `config ids are unique: ${ids}`);
            entries.forEach((e) => {
              assert.ok(e.id, 'every config entry has an id');
              if (e.kind !== 'INFO') assert.ok(e.name, `config entry ${e.id} has a name`);
              if (e.kind.startsWith('SELECT')) {
                assert.ok(e.options.length > 0 && e.options.every((o) => o.label && o.value), `${e.id}'s options`);
              }
            });
            return {configParams: entries, ...config};
          },
        };
      },
      getFields() {
        const fields = [];
        const make = (concept) => {
          const out = {concept};
          fields.push(out);
          const b = builder(out, ['setId', 'setName', 'setDescription']);
          b.setType = (type) => {
            assert.ok(FIELD_TYPES.includes(type), `field type ${type}`);
            out.type = type;
            return b;
          };
          b.setAggregation = (aggregation) => {
            assert.ok(AGGREGATIONS.includes(aggregation), `aggregation ${aggregation}`);
            assert.equal(concept, 'METRIC', 'only metrics aggregate');
            out.aggregation = aggregation;
            return b;
          };
          return b;
        };
        return {
          newDimension: () => make('DIMENSION'),
          newMetric: () => make('METRIC'),
          build() {
            const ids = fields.map((f) => f.id);
            assert.equal(new Set(ids).size, ids.length, `field ids are unique: ${ids}`);
            fields.forEach((f) => assert.ok(f.id && f.name && f.type, `field ${JSON.stringify(f)}`));
            return fields.map((f) => ({...f}));
          },
        };
      },
      newUserError() {
        const out = {};
        const b = builder(out, ['setText', 'setDebugText']);
        b.throwException = () => {
          log.push(out);
          const error = new Error(out.text);
          error.userError = true;
          error.debugText = out.debugText;
          throw error;
        };
        return b;
      },
    }),
  };
}

function sorted(value) {
  if (Array.isArray(value)) return value.map(sorted);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.keys(value).sort().map((k) => [k, sorted(value[k])]));
  }
  return value;
}

/** A fresh connector: Reports.gs and Code.gs loaded with the fakes. `fetches` lists every request made. */
function load({key, url = recorded.api_url, help, now = recorded.now, fetch} = {}) {
  const fetches = [];
  const userErrors = [];
  const user = new Map();
  const scriptProperties = new Map();
  if (key !== undefined) user.set('SIGNALS_API_KEY', key);
  if (url !== null) scriptProperties.set('SIGNALS_API_URL', url);
  if (help !== undefined) scriptProperties.set('SIGNALS_HELP_URL', help);
  const cacheEntries = new Map();
  const properties = (store) => ({
    getProperty: (name) => (store.has(name) ? store.get(name) : null),
    setProperty(name, value) { store.set(name, String(value)); return this; },
    deleteProperty(name) { store.delete(name); return this; },
  });
  const put = (k, value, seconds) => {
    assert.ok(k.length <= 250, 'cache keys are at most 250 characters');
    assert.ok(typeof value === 'string' && value.length <= 100000, 'cache values are strings of at most 100 KB');
    assert.ok(Number.isInteger(seconds) && seconds >= 1 && seconds <= 21600, `cache seconds ${seconds}`);
    cacheEntries.set(k, {value, seconds});
  };
  const context = {
    console,
    DataStudioApp: dataStudio(userErrors),
    UrlFetchApp: {
      fetch(requestUrl, options) {
        const headers = options.headers || {};
        const method = (options.method || 'get').toUpperCase();
        const payload = options.payload === undefined ? null : JSON.parse(options.payload);
        fetches.push({url: requestUrl, method, headers, payload, options});
        if (fetch) return fetch(requestUrl, options);
        if (!requestUrl.startsWith(recorded.api_url)) throw new Error('DNS error: ' + requestUrl);
        const match = recorded.recordings.find((r) => r.method === method && r.url === requestUrl &&
          r.authorization === headers.Authorization &&
          JSON.stringify(sorted(r.payload)) === JSON.stringify(sorted(payload)));
        if (!match) throw new Error(`no recorded answer for ${method} ${requestUrl} ${JSON.stringify(payload)}`);
        return {getResponseCode: () => match.status, getContentText: () => match.body, getAllHeaders: () => match.headers};
      },
    },
    PropertiesService: {getUserProperties: () => properties(user), getScriptProperties: () => properties(scriptProperties)},
    CacheService: {
      getUserCache: () => ({
        get: (k) => (cacheEntries.has(k) ? cacheEntries.get(k).value : null),
        getAll: (keys) => Object.fromEntries(keys.filter((k) => cacheEntries.has(k)).map((k) => [k, cacheEntries.get(k).value])),
        put,
        putAll: (values, seconds) => Object.entries(values).forEach(([k, v]) => put(k, v, seconds)),
      }),
    },
    Utilities: {
      DigestAlgorithm: {SHA_256: 'sha256'},
      Charset: {UTF_8: 'utf8'},
      computeDigest: (algorithm, text) => Array.from(crypto.createHash(algorithm).update(text, 'utf8').digest())
        .map((b) => (b > 127 ? b - 256 : b)),  // Apps Script gives signed bytes
    },
  };
  vm.createContext(context);
  SOURCES.forEach(([name, source]) => vm.runInContext(source, context, {filename: name}));
  context.signalsNow_ = () => new Date(now);  // the fixture's clock, the API's too
  // What the functions return, as plain values of this realm (deepEqual compares prototypes).
  const plain = (value) => (value === undefined ? value : JSON.parse(JSON.stringify(value)));
  const script = new Proxy(context, {
    get: (target, name) => (typeof target[name] === 'function'
      ? (...args) => plain(target[name](...args)) : target[name]),
  });
  return {script, fetches, user, cacheEntries, userErrors};
}

const REPORTS = JSON.parse(JSON.stringify(load().script.SIGNALS_REPORTS));
const reportOf = (id) => REPORTS.reports.find((r) => r.id === id);
const caseOf = (name) => {
  const found = recorded.cases.find((c) => c.case === name);
  assert.ok(found, `case ${name} was recorded`);
  return found;
};
const answersOf = (name) => caseOf(name).requests.map((r) => recorded.recordings[r.recording]);

/** getData for a recorded case: the connector with that case's key, its configuration and fields. */
function run(name, {scriptParams, loaded} = {}) {
  const c = caseOf(name);
  loaded = loaded || load({key: recorded.keys[c.key]});
  let result;
  let error;
  try {
    result = loaded.script.getData({configParams: c.config, fields: c.fields.map((f) => ({name: f})), scriptParams});
  } catch (e) {
    error = e;
  }
  return {...loaded, c, result, error};
}

function assertRequests(c, fetches) {
  assert.deepEqual(fetches.map((f) => [f.method, f.url, f.payload === null ? null : sorted(f.payload)]),
    c.requests.map((r) => [r.method, recorded.recordings[r.recording].url, r.payload === null ? null : sorted(r.payload)]));
  fetches.forEach((f) => {
    assert.equal(f.headers.Authorization, 'Bearer ' + recorded.keys[c.key]);
    assert.equal(f.headers.Accept, 'application/json');
    assert.match(f.headers['X-Signals-Client'], /^signals-looker-studio\/\d+\.\d+\.\d+$/);
    assert.equal(f.options.muteHttpExceptions, true);
    assert.equal(f.options.followRedirects, false);
  });
}

/** What Looker Studio should get for a record's field. */
function expected(def, record, body, headers) {
  let value;
  if (def.source === 'header') {
    value = headers[def.header.toLowerCase()];
  } else {
    value = def.source === 'answer' ? body : record;
    for (const step of def.path) value = value === undefined || value === null ? value : value[step];
  }
  if (value === undefined || value === null) return null;
  if (def.type === 'YEAR_MONTH_DAY_HOUR') return value.slice(0, 4) + value.slice(5, 7) + value.slice(8, 10) + value.slice(11, 13);
  return value;
}

// ---- authentication --------------------------------------------------------------------------

test('getAuthType: a key (KEY), with the help address when the deployment sets one', {skip}, () => {
  assert.deepEqual(load().script.getAuthType(), {type: 'KEY'});
  assert.deepEqual(load({help: 'https://signals.example.com/keys'}).script.getAuthType(),
    {type: 'KEY', helpUrl: 'https://signals.example.com/keys'});
});

test('setCredentials keeps a key the API accepts (GET /api/v1/account), refuses one it does not', {skip}, () => {
  const good = load();
  assert.deepEqual(good.script.setCredentials({key: '  ' + recorded.keys.analyst + ' '}), {errorCode: 'NONE'});
  assert.equal(good.user.get('SIGNALS_API_KEY'), recorded.keys.analyst);
  assert.deepEqual(good.fetches.map((f) => [f.method, f.url, f.headers.Authorization]),
    [['GET', recorded.api_url + '/api/v1/account', 'Bearer ' + recorded.keys.analyst]]);
  const bad = load();
  assert.deepEqual(bad.script.setCredentials({key: recorded.keys.wrong}), {errorCode: 'INVALID_CREDENTIALS'});
  assert.equal(bad.user.has('SIGNALS_API_KEY'), false);
  const empty = load();
  assert.deepEqual(empty.script.setCredentials({key: '  '}), {errorCode: 'INVALID_CREDENTIALS'});
  assert.equal(empty.fetches.length, 0);
});

test('isAuthValid: a stored key the API accepts (asked once an hour); resetAuth forgets it', {skip}, () => {
  assert.equal(load().script.isAuthValid(), false);
  const good = load({key: recorded.keys.analyst});
  assert.equal(good.script.isAuthValid(), true);
  assert.equal(good.script.isAuthValid(), true);
  assert.equal(good.fetches.length, 1, 'the account answer is cached');
  assert.equal(load({key: recorded.keys.wrong}).script.isAuthValid(), false);
  const unreachable = load({key: recorded.keys.analyst, url: 'https://nowhere.test'});
  assert.equal(unreachable.script.isAuthValid(), true, 'an API that cannot be reached is not a wrong key');
  good.script.resetAuth();
  assert.equal(good.user.has('SIGNALS_API_KEY'), false);
});

// ---- configuration ------------------------------------------------------------------------------

test('getConfig, step 1: the report, one per endpoint of the generated table', {skip}, () => {
  const config = load().script.getConfig({languageCode: 'en'});
  assert.equal(config.isSteppedConfig, true);
  assert.equal(config.dateRangeRequired, false);
  assert.deepEqual(config.configParams.map((e) => e.id), ['about', 'report']);
  const report = config.configParams[1];
  assert.equal(report.kind, 'SELECT_SINGLE');
  assert.equal(report.isDynamic, true);
  assert.deepEqual(report.options.map((o) => o.value), ['top_keywords', 'keyword_timeseries', 'domain_timeseries',
    'geo_heat', 'trending', 'keyword_activity', 'query']);
  assert.match(report.options.find((o) => o.value === 'query').label, /^Flexible query \(POST \/query\), Analyst plan and above$/);
  assert.match(config.configParams[0].text, /estimate with noise added for privacy/);
});

test('getConfig, step 2: the chosen report\'s parameters, each with its control', {skip}, () => {
  const script = load().script;
  for (const report of REPORTS.reports) {
    const config = script.getConfig({configParams: {report: report.id}});
    assert.equal(config.isSteppedConfig, false);
    const entries = Object.fromEntries(config.configParams.map((e) => [e.id, e]));
    const ids = config.configParams.map((e) => e.id);
    assert.deepEqual(ids, ['about', 'report', ...report.parameters.map((p) => p.id),
      ...(report.paged ? ['first_page_only'] : [])], report.id);
    for (const p of report.parameters) {
      const kind = {select: 'SELECT_SINGLE', multi: 'SELECT_MULTIPLE', checkbox: 'CHECKBOX', flag: 'CHECKBOX',
        number: 'TEXTINPUT', text: 'TEXTINPUT', list: 'TEXTINPUT'}[p.control];
      assert.equal(entries[p.id].kind, kind, `${report.id} ${p.id}`);
      assert.equal(entries[p.id].allowOverride, p.override);
      if (p.options) assert.deepEqual(entries[p.id].options.map((o) => o.value), p.options.map(String));
      if (p.default !== undefined && kind === 'TEXTINPUT') assert.equal(entries[p.id].placeholder, String(p.default));
    }
  }
  const top = Object.fromEntries(script.getConfig({configParams: {report: 'top_keywords'}}).configParams.map((e) => [e.id, e]));
  assert.deepEqual(top.window.options.map((o) => o.value), ['1h', '6h', '12h', '24h', '7d', '30d']);
  assert.match(top.window.helpText, /Empty: 24h\.$/);
  assert.equal(top.limit.placeholder, '50');
  assert.equal(top.window.allowOverride, true, 'a report may change the window');
  assert.equal(top.compare.allowOverride, false, 'compare changes the fields: not in a report');
  const series = Object.fromEntries(script.getConfig({configParams: {report: 'keyword_timeseries'}}).configParams
    .map((e) => [e.id, e]));
  assert.equal(series.keyword.name, 'keyword (required)');
  const query = Object.fromEntries(script.getConfig({configParams: {report: 'query'}}).configParams.map((e) => [e.id, e]));
  assert.equal(query.group_by.kind, 'SELECT_MULTIPLE');
  assert.equal(query.filters_countries.kind, 'TEXTINPUT');
  assert.equal(query.filters_platforms.kind, 'SELECT_MULTIPLE');
  assert.equal(query.format, undefined, 'the connector reads JSON: no format');
  assert.equal(query.cursor, undefined, 'nor paging');
  const unknown = script.getConfig({configParams: {report: 'gone'}});
  assert.equal(unknown.isSteppedConfig, true);
});

// ---- schema ------------------------------------------------------------------------------------

test('getSchema for each report: its record fields, then as_of and the disclaimer', {skip}, () => {
  const script = load().script;
  for (const report of REPORTS.reports) {
    const {schema} = script.getSchema({configParams: {report: report.id}});
    const plain = report.fields.filter((f) => f.when === null && (!report.groups || f.group === null));
    assert.deepEqual(schema.map((f) => f.id), [...plain.map((f) => f.id), 'as_of', 'disclaimer'], report.id);
    schema.forEach((f) => {
      const def = [...report.fields, ...REPORTS.answer_fields].find((d) => d.id === f.id);
      assert.equal(f.name, def.name);
      assert.equal(f.concept, def.concept);
      assert.equal(f.aggregation, def.aggregation);
    });
  }
  const top = load().script.getSchema({configParams: {report: 'top_keywords'}}).schema;
  const byId = Object.fromEntries(top.map((f) => [f.id, f]));
  assert.deepEqual([byId.keyword_raw.type, byId.keyword_raw.concept], ['TEXT', 'DIMENSION']);
  assert.deepEqual([byId.suppressions.type, byId.suppressions.aggregation], ['NUMBER', 'SUM']);
  assert.equal(byId.users_est.aggregation, 'MAX', 'users do not add up across rows');
  assert.equal(byId.rank.concept, 'DIMENSION');
  assert.equal(byId.as_of.type, 'YEAR_MONTH_DAY_HOUR');
  assert.match(byId.suppressions.description, /noise added for privacy/);
});

test('getSchema: time and geography as Looker Studio types, by level for /geo-heat', {skip}, () => {
  const script = load().script;
  const types = (config) => Object.fromEntries(script.getSchema({configParams: config}).schema.map((f) => [f.id, f.type]));
  assert.equal(types({report: 'keyword_timeseries'}).ts, 'YEAR_MONTH_DAY_HOUR');
  assert.deepEqual([types({report: 'geo_heat'}).geo_key, types({report: 'geo_heat'}).label], ['COUNTRY_CODE', 'COUNTRY']);
  const region = types({report: 'geo_heat', level: 'region'});
  assert.deepEqual([region.geo_key, region.label], ['REGION_CODE', 'REGION']);
  const city = types({report: 'geo_heat', level: 'city'});
  assert.deepEqual([city.geo_key, city.label], ['TEXT', 'CITY'], 'a GeoNames id is not a Looker Studio city code');
  const county = types({report: 'geo_heat', level: 'county'});
  assert.deepEqual([county.geo_key, county.label], ['TEXT', 'TEXT']);
  const query = types({report: 'query', group_by: 'country,region,city,time'});
  assert.deepEqual(query, {country_id: 'COUNTRY_CODE', country_name: 'COUNTRY', region_id: 'REGION_CODE',
    region_name: 'REGION', city_id: 'TEXT', city_name: 'CITY', ts: 'YEAR_MONTH_DAY_HOUR', suppressions: 'NUMBER',
    unique_users: 'NUMBER', events: 'NUMBER', as_of: 'YEAR_MONTH_DAY_HOUR', disclaimer: 'TEXT'});
  assert.deepEqual(Object.keys(types({report: 'query'})), ['suppressions', 'unique_users', 'events', 'as_of', 'disclaimer'],
    'no group_by: the totals');
});

test('getSchema: compare and intervals add their columns, with readable names', {skip}, () => {
  const schema = load().script.getSchema({configParams: {report: 'geo_heat', compare: 'true', intervals: true}}).schema;
  const names = Object.fromEntries(schema.map((f) => [f.id, f.name]));
  assert.equal(names.previous_suppressions, 'suppressions, previous period');
  assert.equal(names.change_suppressions_pct, 'suppressions, change %');
  assert.equal(names.intervals_unique_users_high, 'unique_users, high (90 % interval)');
  const byId = Object.fromEntries(schema.map((f) => [f.id, f]));
  assert.equal(byId.change_suppressions_beyond_noise.type, 'BOOLEAN');
  assert.equal(byId.change_suppressions_pct.aggregation, 'AVG');
  const only = load().script.getSchema({configParams: {report: 'geo_heat', intervals: 'true'}}).schema.map((f) => f.id);
  assert.ok(only.includes('intervals_suppressions_low') && !only.includes('previous_suppressions'));
  assert.throws(() => load().script.getSchema({configParams: {}}), /^Error: Choose a report/);
});

// ---- data --------------------------------------------------------------------------------------

const DATA_CASES = ['top_pages', 'top_first', 'top_default_limit', 'keyword_timeseries', 'geo_region', 'compared',
  'trending_pages', 'query_pages'];

for (const name of DATA_CASES) {
  test(`getData ${name}: the requested fields, in their order, of every record of every page`, {skip}, () => {
    const {result, error, fetches, c} = run(name);
    assert.equal(error, undefined, error && error.message);
    assertRequests(c, fetches);
    const report = reportOf(c.config.report);
    const defs = c.fields.map((id) => [...report.fields, ...REPORTS.answer_fields].find((d) => d.id === id));
    assert.deepEqual(result.schema.map((f) => f.id), c.fields);
    const rows = [];
    answersOf(name).forEach((answer) => {
      const body = JSON.parse(answer.body);
      body[report.records].forEach((record) => rows.push(defs.map((d) => expected(d, record, body, answer.headers))));
    });
    assert.ok(rows.length > 0, 'the case has rows');
    assert.deepEqual(result.rows.map((r) => r.values), rows);
  });
}

test('getData follows Link rel="next" to the last page, and the pages make the whole answer', {skip}, () => {
  const {result, c} = run('top_pages');
  assert.ok(c.requests.length >= 3, 'the case has several pages');
  const total = Number(answersOf('top_pages')[0].headers['signals-total-rows']);
  assert.equal(result.rows.length, total);
  const ranks = result.rows.map((r) => r.values[c.fields.indexOf('rank')]);
  assert.deepEqual(ranks, Array.from({length: total}, (_, i) => i + 1));
  assert.match(answersOf('top_pages')[1].url, /offset=3&as_of=/, 'the next page pins as_of');
});

test('getData of /query posts the same body to the next page\'s cursor', {skip}, () => {
  const {fetches, error} = run('query_pages');
  assert.equal(error, undefined, error && error.message);
  assert.ok(fetches.length >= 2);
  assert.equal(fetches[0].url, recorded.api_url + '/api/v1/signals/query');
  fetches.slice(1).forEach((f) => {
    assert.match(f.url, /\/api\/v1\/signals\/query\?cursor=/);
    assert.equal(f.options.payload, fetches[0].options.payload);
    assert.equal(f.options.contentType, 'application/json');
  });
  assert.deepEqual(JSON.parse(fetches[0].options.payload), {window: '7d', filters: {countries: ['US']},
    group_by: ['country', 'time'], bucket: 'day', limit: 5});
});

test('getData: "Only the first page", and Looker Studio\'s sample extraction, read one page', {skip}, () => {
  const first = run('top_first');
  assert.equal(first.fetches.length, 1);
  assert.equal(first.result.rows.length, 3);
  const sample = run('top_pages', {scriptParams: {sampleExtraction: true}});
  assert.equal(sample.fetches.length, 1);
  assert.equal(sample.result.rows.length, 3);
});

test('getData: an empty limit reads every row in the largest pages', {skip}, () => {
  const {fetches} = run('top_default_limit');
  assert.equal(fetches[0].url, recorded.api_url + '/api/v1/signals/top-keywords?window=7d&limit=500');
});

test('answers are cached per request until the next hour, without the key in the cache\'s keys', {skip}, () => {
  const c = caseOf('top_pages');
  const loaded = load({key: recorded.keys[c.key]});
  const first = run('top_pages', {loaded});
  const again = run('top_pages', {loaded});
  assert.deepEqual(again.result, first.result);
  assert.equal(loaded.fetches.length, c.requests.length, 'the second getData asked nothing');
  assert.equal(loaded.cacheEntries.size, c.requests.length, 'one entry per page');
  for (const [k, entry] of loaded.cacheEntries) {
    assert.equal(entry.seconds, 3600 - (34 * 60 + 56), 'the fixture\'s clock is 12:34:56: the answers change at 13:00');
    assert.ok(!k.includes(recorded.keys.analyst), 'no key in a cache key');
  }
  const other = run('top_first', {loaded});  // another request (first page only, same URL): the same entry
  assert.equal(other.error, undefined);
  assert.equal(loaded.fetches.length, c.requests.length);
  const late = load({key: recorded.keys[c.key], now: '2026-03-10T12:59:59.500Z'});
  assert.equal(run('top_first', {loaded: late}).error, undefined);
  assert.equal(late.cacheEntries.size, 0, 'half a second before the hour: not kept');
});

test('a page longer than a cache entry is cached in pieces', {skip}, () => {
  const c = caseOf('compared');
  const loaded = load({key: recorded.keys[c.key]});
  loaded.script.SIGNALS_CACHE_CHUNK_CHARS = 300;
  const first = run('compared', {loaded});
  assert.ok(loaded.cacheEntries.size > c.requests.length, 'more entries than pages');
  assert.ok([...loaded.cacheEntries.values()].every((e) => e.value.length <= 300 || e.value.startsWith('chunks:')));
  const again = run('compared', {loaded});
  assert.deepEqual(again.result, first.result);
  assert.equal(loaded.fetches.length, c.requests.length);
});

// ---- errors ------------------------------------------------------------------------------------

test('a bad parameter: the API\'s own words, as a user error, not cached', {skip}, () => {
  const {error, cacheEntries, userErrors} = run('bad_parameter');
  assert.equal(error.userError, true);
  assert.equal(error.message, 'Signals API refused the parameters: limit: 0 is out of bounds; expected an integer from 1 to 500');
  assert.match(error.debugText, /^HTTP 400 https:\/\/\S+top-keywords\?window=7d&limit=0 \(request_id \w+\): /);
  assert.equal(cacheEntries.size, 0, 'errors are not cached');
  assert.equal(userErrors.length, 1);
});

test('a wrong key, a plan below the endpoint\'s, a rate limit: each said as the API says it', {skip}, () => {
  assert.match(run('wrong_key').error.message,
    /^Signals API key refused: The API key is not valid: .* Reconnect the data source with a valid key\.$/);
  assert.equal(run('plan').error.message, 'Signals API: POST /api/v1/signals/query requires the Analyst plan or higher; ' +
    'this key\'s subscription is on the Observer plan.');
  const limited = run('rate_limited');
  const retry = answersOf('rate_limited')[0].headers['retry-after'];
  assert.ok(Number(retry) >= 1);
  assert.equal(limited.error.message, `Signals API rate limit reached: retry in ${retry} s.`);
});

test('no API address, no key, a missing required parameter, an unknown field: said before any request', {skip}, () => {
  const noUrl = load({key: 'k', url: null});
  assert.throws(() => noUrl.script.getData({configParams: {report: 'geo_heat'}, fields: [{name: 'geo_key'}]}),
    /^Error: This connector has no Signals API address: whoever deployed it sets the script property SIGNALS_API_URL/);
  const noKey = load({});
  assert.throws(() => noKey.script.getData({configParams: {report: 'geo_heat'}, fields: [{name: 'geo_key'}]}),
    /^Error: No Signals API key/);
  const loaded = load({key: recorded.keys.analyst});
  assert.throws(() => loaded.script.getData({configParams: {report: 'keyword_timeseries'}, fields: [{name: 'ts'}]}),
    /^Error: keyword: required; set it in the data source's configuration\.$/);
  assert.throws(() => loaded.script.getData({configParams: {report: 'geo_heat'}, fields: [{name: 'nope'}]}),
    /^Error: The field "nope" is not one of this report's/);
  assert.equal(loaded.fetches.length + noUrl.fetches.length + noKey.fetches.length, 0);
  const unreachable = load({key: 'k', url: 'https://nowhere.test'});
  assert.throws(() => unreachable.script.getData({configParams: {report: 'geo_heat'}, fields: [{name: 'geo_key'}]}),
    /^Error: Cannot reach the Signals API at https:\/\/nowhere\.test: DNS error/);
});

test('a next page on another address is not followed (the key goes to the API only)', {skip}, () => {
  const answer = {getResponseCode: () => 200, getContentText: () => '{"window": "7d", "keywords": [], "disclaimer": "d"}',
    getAllHeaders: () => ({Link: '<https://elsewhere.test/steal>; rel="next"', 'X-Signals-As-Of': '2026-03-10T12:00:00Z'})};
  const loaded = load({key: 'k', fetch: () => answer});
  assert.throws(() => loaded.script.getData({configParams: {report: 'top_keywords'}, fields: [{name: 'keyword_raw'}]}),
    /next page on another address \(https:\/\/elsewhere\.test\/steal\): not followed/);
  assert.equal(loaded.fetches.length, 1);
});
