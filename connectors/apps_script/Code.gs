/**
 * Signals API functions for Google Sheets (Apps Script, V8).
 *
 *   =SIGNALS_TOP_KEYWORDS("7d", 10)
 *   =SIGNALS_KEYWORD_TIMESERIES("climate change", "30d", "day")
 *
 * One custom function per GET endpoint (and SIGNALS_QUERY for POST /query, Analyst plan and up),
 * each returning a table: a header row, then one row per record; timestamps come as dates.
 * Leave an argument empty to get the API's default. The key is stored by the "Signals" menu in
 * your user properties (never in the sheet). Answers are cached (CacheService) until the API's
 * next as_of, the start of the next hour. Errors show as the cell's error message: the API's own
 * words for a bad parameter, "Plan Observer cannot call /query", "Rate limited, retry in 12 s".
 *
 * Tested under Node's test runner with fakes of UrlFetchApp, PropertiesService and CacheService
 * serving answers recorded from the real API (connectors/apps_script/test/, run by
 * tests/connectors/test_apps_script.py).
 */

var SIGNALS_CLIENT = 'signals-apps-script/0.1.0';
var SIGNALS_KEY_PROPERTY = 'SIGNALS_API_KEY';
var SIGNALS_URL_PROPERTY = 'SIGNALS_API_URL';
var SIGNALS_API_PATH = '/api/v1/signals';
var SIGNALS_ACCOUNT_PATH = '/api/v1/account';
var SIGNALS_OPENAPI_PATH = '/api/v1/openapi';
var SIGNALS_CACHE_MAX_SECONDS = 21600;  // CacheService keeps an entry at most 6 hours
var SIGNALS_CACHE_MAX_CHARS = 100000;   // and at most 100 KB per entry
var SIGNALS_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

// ---- the menu --------------------------------------------------------------------------

function onOpen() {
  SpreadsheetApp.getUi()
    .createMenu('Signals')
    .addItem('Set API key…', 'signalsSetKey')
    .addItem('Set API address…', 'signalsSetUrl')
    .addItem('Show my plan', 'signalsShowPlan')
    .addToUi();
}

function signalsSetKey() {
  var ui = SpreadsheetApp.getUi();
  var answer = ui.prompt('Signals API key',
    'Paste your key (it starts with sig_live_). It is kept in your user properties, never in the sheet. ' +
    'Leave it empty to remove the stored key.', ui.ButtonSet.OK_CANCEL);
  if (answer.getSelectedButton() !== ui.Button.OK) return;
  var key = answer.getResponseText().trim();
  var properties = PropertiesService.getUserProperties();
  if (key) {
    properties.setProperty(SIGNALS_KEY_PROPERTY, key);
    ui.alert('Signals API key saved for your account.');
  } else {
    properties.deleteProperty(SIGNALS_KEY_PROPERTY);
    ui.alert('Signals API key removed.');
  }
}

function signalsSetUrl() {
  var ui = SpreadsheetApp.getUi();
  var answer = ui.prompt('Signals API address', 'The address of the Signals API, e.g. https://signals.example.com',
    ui.ButtonSet.OK_CANCEL);
  if (answer.getSelectedButton() !== ui.Button.OK) return;
  var url = answer.getResponseText().trim().replace(/\/+$/, '');
  if (!/^https?:\/\/[^\s/]+/.test(url)) {
    ui.alert('That is not an address: it should start with https://');
    return;
  }
  PropertiesService.getUserProperties().setProperty(SIGNALS_URL_PROPERTY, url);
  ui.alert('Signals API address saved: ' + url);
}

function signalsShowPlan() {
  var ui = SpreadsheetApp.getUi();
  try {
    var account = signalsAccount_();
    ui.alert('Subscription ' + account.subscription + ': plan ' + account.plan_label + ', ' +
      account.requests_per_minute + ' requests a minute, key ' + account.key_prefix + '…');
  } catch (error) {
    ui.alert(error.message);
  }
}

// ---- the custom functions -------------------------------------------------------------------

/**
 * The most suppressed keywords, ranked by total suppressions.
 * @param {string} window 1h, 6h, 12h, 24h, 7d or 30d (empty: 24h)
 * @param {number} limit 1 to 500 (empty: 50)
 * @param {string} as_of an earlier UTC hour the window ends at, e.g. "2026-11-20T13:00:00Z" (empty: now)
 * @param {string} compare previous_period: add each record's numbers in the period before, and their change
 * @param {boolean} intervals TRUE: add [low, high] columns holding each count's exact value about 9 times in 10
 * @param {number} offset the rows to skip, for the next page of a longer answer (empty: 0); the
 *   answer's total row count is in the API's Signals-Total-Rows header
 * @return A table: keyword_raw, suppressions, users_est, rank (then "suppressions, previous period", "…, change %", "…, beyond noise", "…, low/high (… interval)" columns)
 * @customfunction
 */
function SIGNALS_TOP_KEYWORDS(window, limit, as_of, compare, intervals, offset) {
  return signalsTable_('GET', '/top-keywords',
    {window: window, limit: limit, as_of: as_of, compare: compare, intervals: signalsFlag_(intervals), offset: offset});
}

/**
 * One keyword's suppressions over time, oldest bucket first.
 * @param {string} keyword the keyword (any spelling; it is normalised)
 * @param {string} window 24h, 7d, 30d or 90d (empty: 7d)
 * @param {string} bucket hour, day or week (empty: hour)
 * @param {string} as_of an earlier UTC hour the window ends at, e.g. "2026-11-20T13:00:00Z" (empty: now)
 * @param {string} compare previous_period: add each record's numbers in the period before, and their change
 * @param {boolean} intervals TRUE: add [low, high] columns holding each count's exact value about 9 times in 10
 * @return A table: ts, suppressions, users_est, events (a bucket's previous: the bucket one window earlier)
 * @customfunction
 */
function SIGNALS_KEYWORD_TIMESERIES(keyword, window, bucket, as_of, compare, intervals) {
  return signalsTable_('GET', '/keyword-timeseries', {keyword: keyword, window: window, bucket: bucket, as_of: as_of,
    compare: compare, intervals: signalsFlag_(intervals)});
}

/**
 * One domain's suppressions over time, oldest bucket first.
 * @param {string} domain a domain name, e.g. reddit.com
 * @param {string} window 24h, 7d, 30d or 90d (empty: 7d)
 * @param {string} bucket hour, day or week (empty: hour)
 * @param {string} as_of an earlier UTC hour the window ends at, e.g. "2026-11-20T13:00:00Z" (empty: now)
 * @param {string} compare previous_period: add each record's numbers in the period before, and their change
 * @param {boolean} intervals TRUE: add [low, high] columns holding each count's exact value about 9 times in 10
 * @return A table: ts, suppressions, users_est, events (a bucket's previous: the bucket one window earlier)
 * @customfunction
 */
function SIGNALS_DOMAIN_TIMESERIES(domain, window, bucket, as_of, compare, intervals) {
  return signalsTable_('GET', '/domain-timeseries', {domain: domain, window: window, bucket: bucket, as_of: as_of,
    compare: compare, intervals: signalsFlag_(intervals)});
}

/**
 * Where suppressions happen, most active first.
 * @param {string} window 1h, 6h, 12h, 24h, 7d or 30d (empty: 24h)
 * @param {string} level country, region, county or city (empty: country)
 * @param {string} as_of an earlier UTC hour the window ends at, e.g. "2026-11-20T13:00:00Z" (empty: now)
 * @param {string} compare previous_period: add each record's numbers in the period before, and their change
 * @param {boolean} intervals TRUE: add [low, high] columns holding each count's exact value about 9 times in 10
 * @return A table: geo_key, label, suppressions, unique_users, keyword_count
 * @customfunction
 */
function SIGNALS_GEO_HEAT(window, level, as_of, compare, intervals) {
  return signalsTable_('GET', '/geo-heat',
    {window: window, level: level, as_of: as_of, compare: compare, intervals: signalsFlag_(intervals)});
}

/**
 * The fastest growing values of a dimension.
 * @param {string} window 24h, 7d or 30d (empty: 24h)
 * @param {string} dimension keyword, domain, platform or page_context (empty: keyword)
 * @param {string} metric suppressions, events or unique_users (empty: suppressions)
 * @param {number} limit 1 to 500 (empty: 50)
 * @param {number} min_baseline values with a smaller baseline are left out (empty: 10)
 * @param {string} as_of an earlier UTC hour the window ends at, e.g. "2026-11-20T13:00:00Z" (empty: now)
 * @param {number} offset the rows to skip, for the next page of a longer answer (empty: 0); the
 *   answer's total row count is in the API's Signals-Total-Rows header
 * @return A table: value, recent, baseline, growth_pct
 * @customfunction
 */
function SIGNALS_TRENDING(window, dimension, metric, limit, min_baseline, as_of, offset) {
  return signalsTable_('GET', '/trending',
    {window: window, dimension: dimension, metric: metric, limit: limit, min_baseline: min_baseline, as_of: as_of,
     offset: offset});
}

/**
 * Which keywords users add to, remove from or edit in their filter lists.
 * @param {string} window 1h, 6h, 12h, 24h, 7d or 30d (empty: 24h)
 * @param {string} type added, removed, edited or all (empty: all)
 * @param {number} limit 1 to 500 (empty: 50)
 * @param {string} as_of an earlier UTC hour the window ends at, e.g. "2026-11-20T13:00:00Z" (empty: now)
 * @param {string} compare previous_period: add each record's numbers in the period before, and their change
 * @param {boolean} intervals TRUE: add [low, high] columns holding each count's exact value about 9 times in 10
 * @param {number} offset the rows to skip, for the next page of a longer answer (empty: 0); the
 *   answer's total row count is in the API's Signals-Total-Rows header
 * @return A table: keyword, adds, removes, edits, total_events, unique_users, net_adds
 * @customfunction
 */
function SIGNALS_KEYWORD_ACTIVITY(window, type, limit, as_of, compare, intervals, offset) {
  return signalsTable_('GET', '/keyword-activity', {window: window, type: type, limit: limit, as_of: as_of,
    compare: compare, intervals: signalsFlag_(intervals), offset: offset});
}

/**
 * Flexible query (Analyst plan and up): filter and group by several dimensions.
 * @param {string} window 1h, 6h, 12h, 24h, 7d, 30d or 90d
 * @param {string} group_by dimensions separated by commas, e.g. "region,time" (empty: totals)
 * @param {string} bucket hour, day or week (needed with time)
 * @param {string} filters e.g. "countries=US,DE; platforms=ios" or JSON (empty: none)
 * @param {string} order_by suppressions, unique_users or events (empty: suppressions)
 * @param {string} order asc or desc (empty: desc)
 * @param {number} limit 1 to 1000 (empty: 100)
 * @param {string} as_of an earlier UTC hour the window ends at, e.g. "2026-11-20T13:00:00Z" (empty: now)
 * @param {string} compare previous_period: add each record's numbers in the period before, and their change
 * @param {boolean} intervals TRUE: add [low, high] columns holding each count's exact value about 9 times in 10
 * @return A table: the group_by fields, then suppressions, unique_users, events
 * @customfunction
 */
function SIGNALS_QUERY(window, group_by, bucket, filters, order_by, order, limit, as_of, compare, intervals) {
  var body = {window: window, bucket: bucket, order_by: order_by, order: order, limit: limit, as_of: as_of,
    compare: compare, intervals: signalsFlag_(intervals)};
  if (!signalsBlank_(group_by)) body.group_by = signalsList_(group_by);
  if (!signalsBlank_(filters)) body.filters = signalsFilters_(filters);
  return signalsTable_('POST', '/query', body);
}

// ---- the machinery ----------------------------------------------------------------------------

function signalsBlank_(value) {
  return value === undefined || value === null || value === '';
}

/** A sheet's TRUE/FALSE (or the words) as a boolean; anything else is passed on for the API to refuse. */
function signalsFlag_(value) {
  if (value === true || value === false || signalsBlank_(value)) return value;
  var text = String(value).trim().toLowerCase();
  return text === 'true' ? true : text === 'false' ? false : value;
}

/**
 * How nested fields become columns and what their headings say: the served OpenAPI document's
 * `x-signals-columns` (the rule of the API's CSV and of the Python connectors, flatcolumns/),
 * read once (no key needed) and cached like an answer. Only answers with nested fields need it.
 */
function signalsColumnRule_() {
  var settings = signalsSettings_();
  var cache = CacheService.getUserCache();
  var cacheKey = 'signals:columns:' + signalsDigest_(settings.url);
  var cached = cache.get(cacheKey);
  if (cached !== null && cached !== undefined) return JSON.parse(cached);
  var response;
  try {
    response = UrlFetchApp.fetch(settings.url + SIGNALS_OPENAPI_PATH, {method: 'get', muteHttpExceptions: true,
      followRedirects: false, headers: {Accept: 'application/json', 'X-Signals-Client': SIGNALS_CLIENT}});
  } catch (error) {
    throw new Error('Cannot reach the Signals API at ' + settings.url + ': ' + error.message);
  }
  var rule = response.getResponseCode() === 200 ? JSON.parse(response.getContentText())['x-signals-columns'] : null;
  if (!rule) throw new Error('The Signals API at ' + settings.url + ' does not say how to lay out these columns');
  cache.put(cacheKey, JSON.stringify(rule), SIGNALS_CACHE_MAX_SECONDS);
  return rule;
}

/** A column's heading as a person reads it: the record's own fields as the API names them, nested ones in
 * the document's words (previous_suppressions -> "suppressions, previous period"). */
function signalsHeader_(column, rule) {
  var headings = rule.headings;
  for (var i = 0; i < headings.length; i++) {
    var prefix = headings[i].prefix, suffix = headings[i].suffix;
    if (column.indexOf(prefix) === 0 && column.length > prefix.length + suffix.length &&
        column.slice(column.length - suffix.length) === suffix) {
      return column.slice(prefix.length, column.length - suffix.length) + ', ' + headings[i].words;
    }
  }
  return column;
}

/** A record with its nested fields as columns, named by the document's rule (as the API's CSV names them). */
function signalsFlat_(record, prefix, out, rule) {
  Object.keys(record).forEach(function (name) {
    var value = record[name];
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      signalsFlat_(value, prefix + name + rule.separator, out, rule);
    } else if (Array.isArray(value) && value.length === rule.pair.length) {
      rule.pair.forEach(function (end, i) { out[prefix + name + rule.separator + end] = value[i]; });
    } else {
      out[prefix + name] = value;
    }
  });
  return out;
}

/** Whether a record has nested fields (compare's, intervals'). */
function signalsNested_(record) {
  return Object.keys(record).some(function (name) { return record[name] !== null && typeof record[name] === 'object'; });
}

function signalsList_(text) {
  return String(text).split(',').map(function (v) { return v.trim(); }).filter(function (v) { return v; });
}

function signalsFilters_(text) {
  text = String(text).trim();
  if (text.charAt(0) === '{') {
    try {
      return JSON.parse(text);
    } catch (error) {
      throw new Error('filters: not valid JSON (' + error.message + ')');
    }
  }
  var filters = {};
  text.split(';').forEach(function (part) {
    if (!part.trim()) return;
    var pair = part.split('=');
    if (pair.length !== 2) throw new Error('filters: write key=value,value; key=value (got "' + part.trim() + '")');
    filters[pair[0].trim()] = signalsList_(pair[1]);
  });
  return filters;
}

function signalsSettings_() {
  var properties = PropertiesService.getUserProperties();
  var key = properties.getProperty(SIGNALS_KEY_PROPERTY);
  var url = properties.getProperty(SIGNALS_URL_PROPERTY);
  if (!url) throw new Error('No Signals API address: use the menu Signals → Set API address…');
  if (!key) throw new Error('No Signals API key: use the menu Signals → Set API key…');
  return {key: key, url: url};
}

/** The answer of one request (cached until the next as_of), or an Error in the cell. */
function signalsFetch_(method, path, params) {
  var settings = signalsSettings_();
  var url = settings.url + path;
  var options = {
    method: method.toLowerCase(),
    muteHttpExceptions: true,
    followRedirects: false,
    headers: {Authorization: 'Bearer ' + settings.key, Accept: 'application/json', 'X-Signals-Client': SIGNALS_CLIENT}
  };
  var given = {};
  Object.keys(params).forEach(function (name) {
    if (!signalsBlank_(params[name])) given[name] = params[name];
  });
  if (method === 'GET') {
    var query = Object.keys(given).map(function (name) {
      return encodeURIComponent(name) + '=' + encodeURIComponent(String(given[name]));
    }).join('&');
    if (query) url += '?' + query;
  } else {
    options.contentType = 'application/json';
    options.payload = JSON.stringify(given);
  }
  var cache = CacheService.getUserCache();
  var cacheKey = 'signals:' + signalsDigest_([method, url, options.payload || '', settings.key].join('\n'));
  var cached = cache.get(cacheKey);
  if (cached !== null && cached !== undefined) return JSON.parse(cached);

  var response;
  try {
    response = UrlFetchApp.fetch(url, options);
  } catch (error) {
    throw new Error('Cannot reach the Signals API at ' + settings.url + ': ' + error.message);
  }
  var status = response.getResponseCode();
  var headers = signalsHeaders_(response);
  var text = response.getContentText();
  if (status !== 200) throw new Error(signalsProblem_(status, headers, text, path));
  var seconds = signalsCacheSeconds_(headers);
  if (seconds > 0 && text.length <= SIGNALS_CACHE_MAX_CHARS) cache.put(cacheKey, text, seconds);
  return JSON.parse(text);
}

function signalsHeaders_(response) {
  var all = response.getAllHeaders();
  var headers = {};
  Object.keys(all).forEach(function (name) { headers[name.toLowerCase()] = String(all[name]); });
  return headers;
}

/** Seconds until the next as_of: the answer's Cache-Control max-age (the API sets it so). */
function signalsCacheSeconds_(headers) {
  var match = /max-age=(\d+)/.exec(headers['cache-control'] || '');
  if (!match) return 0;
  return Math.min(Number(match[1]), SIGNALS_CACHE_MAX_SECONDS);
}

function signalsDigest_(text) {
  var bytes = Utilities.computeDigest(Utilities.DigestAlgorithm.SHA_256, text, Utilities.Charset.UTF_8);
  return bytes.map(function (b) { return ((b + 256) % 256).toString(16).padStart(2, '0'); }).join('');
}

/** A refused request, in a sentence for the cell. */
function signalsProblem_(status, headers, text, path) {
  var problem = {};
  try { problem = JSON.parse(text) || {}; } catch (ignored) { problem = {}; }
  var detail = problem.detail || problem.title || ('HTTP ' + status);
  var shortPath = path.replace(/^\/api\/v1(\/signals)?/, '');
  if (status === 400 && problem.errors && problem.errors.length) {
    return problem.errors.map(function (e) { return e.name + ': ' + e.reason; }).join('; ');
  }
  if (status === 401) return 'Signals API key refused: ' + detail + ' Use the menu Signals → Set API key…';
  if (status === 403) {
    try {
      return 'Plan ' + signalsAccount_().plan_label + ' cannot call ' + shortPath;
    } catch (ignored) {
      return 'Your plan cannot call ' + shortPath + ': ' + detail;
    }
  }
  if (status === 429) return 'Rate limited, retry in ' + (headers['retry-after'] || '60') + ' s';
  if (status === 503) return 'Signals API unavailable, retry in ' + (headers['retry-after'] || '60') + ' s';
  return 'Signals API error ' + status + ': ' + detail;
}

function signalsAccount_() {
  return signalsFetch_('GET', SIGNALS_ACCOUNT_PATH, {});
}

/** An answer as rows: a header row (the record's fields), then the records; timestamps as dates. */
function signalsTable_(method, path, params) {
  var body = signalsFetch_(method, SIGNALS_API_PATH + path, params);
  var records = [];
  Object.keys(body).forEach(function (name) {  // the records are the answer's last array
    if (Array.isArray(body[name])) records = body[name];
  });
  if (!records.length || typeof records[0] !== 'object') return [['No rows for these parameters']];
  var rule = records.some(signalsNested_) ? signalsColumnRule_() : {separator: '', pair: [], headings: []};
  records = records.map(function (record) { return signalsFlat_(record, '', {}, rule); });
  var columns = Object.keys(records[0]);
  var rows = [columns.map(function (column) { return signalsHeader_(column, rule); })];
  records.forEach(function (record) {
    rows.push(columns.map(function (column) {
      var value = record[column];
      if (value === null || value === undefined) return '';
      if (typeof value === 'string' && SIGNALS_TIMESTAMP.test(value)) return new Date(value);
      return value;
    }));
  });
  return rows;
}
