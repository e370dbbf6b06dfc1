/**
 * Signals API as a Looker Studio community connector (Apps Script, V8).
 *
 * A data source is one report of the API: one per GET endpoint and POST /query (Analyst plan and
 * up), chosen in the data source's configuration with its parameters. The reports, their
 * parameters and their fields are not written here: Reports.gs holds them, generated from the
 * API's OpenAPI document (python -m connectors.looker_studio.generate), so a new endpoint needs no
 * code here.
 *
 * - Authentication: KEY, the subscription's key, kept in the user's properties and sent as
 *   Authorization: Bearer <key>, the same header as every other client. The API's address is a
 *   script property (SIGNALS_API_URL), set once by whoever deploys the connector.
 * - getData follows the API's pages (Link rel="next") unless "Only the first page" is ticked, and
 *   caches each page (CacheService, per user, keyed by the request) until the next hour, when the
 *   API's answers change.
 * - A refused request is shown as the API words it (its problem+json), as a Looker Studio user error.
 *
 * Tested under Node's test runner with fakes of DataStudioApp, UrlFetchApp, PropertiesService and
 * CacheService serving answers recorded from the real API (connectors/looker_studio/test/, run by
 * tests/connectors/test_looker_studio.py). docs/dashboard-builders.md says how to deploy it.
 */

var SIGNALS_CLIENT = 'signals-looker-studio/0.1.0';
var SIGNALS_KEY_PROPERTY = 'SIGNALS_API_KEY';   // user property: the subscription's key
var SIGNALS_URL_PROPERTY = 'SIGNALS_API_URL';   // script property: the API's address
var SIGNALS_HELP_PROPERTY = 'SIGNALS_HELP_URL'; // script property (optional): where users read how to get a key
var SIGNALS_ACCOUNT_PATH = '/api/v1/account';
var SIGNALS_MAX_PAGES = 50;                     // pages of one answer getData reads at most
var SIGNALS_CACHE_CHUNK_CHARS = 90000;          // CacheService keeps at most 100 KB per entry: longer pages in pieces
var SIGNALS_CACHE_MAX_CHUNKS = 50;
var SIGNALS_CACHE_MAX_SECONDS = 21600;          // and an entry at most 6 hours
var SIGNALS_ABOUT = 'Signals: aggregated, anonymous statistics about content filtering. Every number is an ' +
  'estimate with noise added for privacy, not an exact count. Choose a report, then its parameters; leave a ' +
  'parameter empty for the API\'s default. All times are UTC.';

function signalsConnector_() {
  return DataStudioApp.createCommunityConnector();
}

function signalsNow_() {
  return new Date();
}

// ---- authentication --------------------------------------------------------------------------

function getAuthType() {
  var cc = signalsConnector_();
  var response = cc.newAuthTypeResponse().setAuthType(cc.AuthType.KEY);
  var help = PropertiesService.getScriptProperties().getProperty(SIGNALS_HELP_PROPERTY);
  if (help) response.setHelpUrl(help);
  return response.build();
}

/** The key is kept only once the API says it works (GET /api/v1/account answers 200). */
function setCredentials(request) {
  var key = String((request && request.key) || '').trim();
  if (!key) return {errorCode: 'INVALID_CREDENTIALS'};
  var answer;
  try {
    answer = signalsFetch_('GET', signalsAddress_() + SIGNALS_ACCOUNT_PATH, null, key);
  } catch (error) {
    console.error('setCredentials: ' + error.message);
    return {errorCode: 'INVALID_CREDENTIALS'};
  }
  if (answer.status !== 200) return {errorCode: 'INVALID_CREDENTIALS'};
  PropertiesService.getUserProperties().setProperty(SIGNALS_KEY_PROPERTY, key);
  return {errorCode: 'NONE'};
}

/** A stored key the API has not refused (its account answer is cached like any answer). Only a 401
 * makes it invalid: an API that cannot be reached or is busy says so in getData instead. */
function isAuthValid() {
  var key = PropertiesService.getUserProperties().getProperty(SIGNALS_KEY_PROPERTY);
  if (!key) return false;
  try {
    signalsPage_('GET', signalsAddress_() + SIGNALS_ACCOUNT_PATH, null, key);
    return true;
  } catch (error) {
    return error.signalsStatus !== 401;
  }
}

function resetAuth() {
  PropertiesService.getUserProperties().deleteProperty(SIGNALS_KEY_PROPERTY);
}

// ---- configuration ------------------------------------------------------------------------------

/** Step 1: the report. Step 2 (Looker Studio asks again with it): the report's parameters. */
function getConfig(request) {
  var cc = signalsConnector_();
  var config = cc.getConfig();
  var params = (request && request.configParams) || {};
  config.newInfo().setId('about').setText(SIGNALS_ABOUT);
  var select = config.newSelectSingle().setId('report').setName('Report')
    .setHelpText('The API endpoint this data source reads. Changing it asks for its parameters again.')
    .setIsDynamic(true);
  SIGNALS_REPORTS.reports.forEach(function (report) {
    select.addOption(config.newOptionBuilder().setLabel(report.label).setValue(report.id));
  });
  var report = signalsReportOf_(params.report, false);
  if (!report) {
    config.setIsSteppedConfig(true);
    return config.build();
  }
  report.parameters.forEach(function (parameter) { signalsConfigEntry_(config, parameter); });
  if (report.paged) {
    config.newCheckbox().setId('first_page_only').setName('Only the first page')
      .setHelpText('Read only the first limit rows of the answer. Unticked, every row is read, page after page ' +
        '(Link rel="next"), ' + SIGNALS_MAX_PAGES + ' pages at most; an empty limit then reads the largest pages.')
      .setAllowOverride(true);
  }
  config.setIsSteppedConfig(false);
  return config.build();
}

function signalsConfigEntry_(config, parameter) {
  var entry;
  var name = parameter.name + (parameter.required ? ' (required)' : '');
  if (parameter.control === 'select' || parameter.control === 'multi') {
    entry = parameter.control === 'select' ? config.newSelectSingle() : config.newSelectMultiple();
    parameter.options.forEach(function (option) {
      entry.addOption(config.newOptionBuilder().setLabel(String(option)).setValue(String(option)));
    });
  } else if (parameter.control === 'checkbox' || parameter.control === 'flag') {
    entry = config.newCheckbox();
  } else {
    entry = config.newTextInput();
    if (parameter.default !== undefined) entry.setPlaceholder(String(parameter.default));
  }
  entry.setId(parameter.id).setName(name).setHelpText(parameter.help).setAllowOverride(Boolean(parameter.override));
}

function signalsReportOf_(id, required) {
  var found = null;
  SIGNALS_REPORTS.reports.forEach(function (report) { if (report.id === id) found = report; });
  if (!found && required) {
    signalsUserError_(id ? 'This connector has no report "' + id + '" any more: choose another in the data ' +
      'source\'s configuration.' : 'Choose a report in the data source\'s configuration.');
  }
  return found;
}

// ---- schema ------------------------------------------------------------------------------------

function getSchema(request) {
  var params = (request && request.configParams) || {};
  var report = signalsReportOf_(params.report, true);
  return {schema: signalsFields_(signalsFieldDefs_(report, params, null)).build()};
}

function signalsTicked_(value) {
  return value === true || String(value).toLowerCase() === 'true';
}

function signalsList_(value) {
  if (value === undefined || value === null) return [];
  var items = Array.isArray(value) ? value : String(value).split(',');
  return items.map(function (v) { return String(v).trim(); }).filter(function (v) { return v; });
}

/** The report's fields for this configuration (the columns compare, intervals and group_by add, with
 * the geographic types of its level), then the answer's; only `ids`, in their order, when given. */
function signalsFieldDefs_(report, params, ids) {
  var groups = report.groups ? signalsList_(params.group_by) : null;
  var level = report.semantics ? (params[report.semantics.param] || report.semantics.default) : null;
  var types = report.semantics ? (report.semantics.values[level] || {}) : {};
  var all = report.fields.concat(SIGNALS_REPORTS.answer_fields).map(function (field) {
    var def = {};
    Object.keys(field).forEach(function (name) { def[name] = field[name]; });
    if (types[field.id]) def.type = types[field.id];
    return def;
  });
  if (ids) {
    return ids.map(function (id) {
      var def = all.filter(function (d) { return d.id === id; })[0];
      if (!def) signalsUserError_('The field "' + id + '" is not one of this report\'s: refresh the data source\'s fields.');
      return def;
    });
  }
  return all.filter(function (def) {
    if (def.when && !signalsTicked_(params[def.when])) return false;
    if (groups && def.group && groups.indexOf(def.group) < 0) return false;
    return true;
  });
}

function signalsFields_(defs) {
  var cc = signalsConnector_();
  var fields = cc.getFields();
  defs.forEach(function (def) {
    var field = def.concept === 'METRIC' ? fields.newMetric() : fields.newDimension();
    field.setId(def.id).setName(def.name).setDescription(def.description || '').setType(cc.FieldType[def.type]);
    if (def.aggregation) field.setAggregation(cc.AggregationType[def.aggregation]);
  });
  return fields;
}

// ---- data --------------------------------------------------------------------------------------

function getData(request) {
  var params = request.configParams || {};
  var report = signalsReportOf_(params.report, true);
  var defs = signalsFieldDefs_(report, params, request.fields.map(function (f) { return f.name; }));
  var sample = Boolean(request.scriptParams && request.scriptParams.sampleExtraction);
  var pages = signalsAnswer_(report, params, sample || signalsTicked_(params.first_page_only));
  var rows = [];
  pages.forEach(function (page) {
    (page.body[report.records] || []).forEach(function (record) {
      rows.push({values: defs.map(function (def) { return signalsValue_(def, record, page); })});
    });
  });
  return {schema: signalsFields_(defs).build(), rows: rows};
}

/** The request a configuration makes: GET with the query string in the parameters' order, or POST with
 * a JSON body. Every row is asked for in the largest pages unless a limit is given. */
function signalsRequestOf_(report, params, firstOnly) {
  var query = [];
  var body = {};
  report.parameters.forEach(function (parameter) {
    var value = signalsParamValue_(parameter, params[parameter.id], report.body);
    if (value === undefined && parameter.id === 'limit' && report.page_size && !firstOnly) value = report.page_size;
    if (value === undefined) {
      if (parameter.required) {
        signalsUserError_(parameter.name + ': required; set it in the data source\'s configuration.');
      }
      return;
    }
    if (report.body) {
      var target = body;
      parameter.path.slice(0, -1).forEach(function (step) { target = target[step] = target[step] || {}; });
      target[parameter.path[parameter.path.length - 1]] = value;
    } else {
      query.push(encodeURIComponent(parameter.name) + '=' + encodeURIComponent(String(value)));
    }
  });
  return {method: report.method, path: report.path + (query.length ? '?' + query.join('&') : ''),
    payload: report.body ? JSON.stringify(body) : null};
}

/** A configuration value as the API takes it, or undefined to leave it out (the API's default). */
function signalsParamValue_(parameter, value, inBody) {
  if (parameter.control === 'checkbox') return signalsTicked_(value) ? (inBody ? true : 'true') : undefined;
  if (parameter.control === 'flag') return signalsTicked_(value) ? parameter.value : undefined;
  if (parameter.control === 'multi' || parameter.control === 'list') {
    var items = signalsList_(value);
    if (!items.length) return undefined;
    return inBody ? items : items.join(',');
  }
  if (value === undefined || value === null) return undefined;
  var text = String(value).trim();
  if (!text) return undefined;
  if (parameter.control === 'number' && inBody && /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(text)) return Number(text);
  return text;  // anything else is sent as written: the API says what is wrong with it
}

/** The answer's pages, the first only or all of them (Link rel="next"; a POST sends the same body). */
function signalsAnswer_(report, params, firstOnly) {
  var base = signalsAddress_();
  var key = signalsKey_();
  var request = signalsRequestOf_(report, params, firstOnly);
  var url = base + request.path;
  var pages = [];
  while (url) {
    if (pages.length >= SIGNALS_MAX_PAGES) {
      signalsUserError_('This answer holds ' + (pages[0].total || 'more') + ' rows, more than ' + SIGNALS_MAX_PAGES +
        ' pages: tick "Only the first page", or narrow the report (a shorter window, filters).');
    }
    var page = signalsPage_(request.method, url, request.payload, key);
    pages.push(page);
    url = firstOnly ? null : signalsNextUrl_(base, page.next);
  }
  return pages;
}

/** The next page's address: a path of the same API (never another host: the key goes only to the API). */
function signalsNextUrl_(base, link) {
  if (!link) return null;
  if (link.charAt(0) === '/') return base + link;
  if (link.indexOf(base + '/') === 0) return link;
  signalsUserError_('The Signals API pointed to a next page on another address (' + link + '): not followed.');
}

/** One page: {body, next, as_of, total}, from the cache or the API. */
function signalsPage_(method, url, payload, key) {
  var cacheKey = 'signals:' + signalsDigest_([method, url, payload || '', key].join('\n'));
  var cached = signalsCacheGet_(cacheKey);
  if (cached !== null) return JSON.parse(cached);
  var response = signalsFetch_(method, url, payload, key);
  if (response.status !== 200) signalsRefuse_(response, url);
  var link = /<([^>]*)>\s*;\s*rel="?next"?/.exec(response.headers.link || '');
  var page = {body: JSON.parse(response.text), next: link ? link[1] : null,
    as_of: response.headers['x-signals-as-of'] || null, total: Number(response.headers['signals-total-rows']) || null};
  signalsCachePut_(cacheKey, JSON.stringify(page), signalsCacheSeconds_(response.headers));
  return page;
}

function signalsFetch_(method, url, payload, key) {
  var options = {method: method.toLowerCase(), muteHttpExceptions: true, followRedirects: false,
    headers: {Authorization: 'Bearer ' + key, Accept: 'application/json', 'X-Signals-Client': SIGNALS_CLIENT}};
  if (payload !== null && payload !== undefined) {
    options.contentType = 'application/json';
    options.payload = payload;
  }
  var response;
  try {
    response = UrlFetchApp.fetch(url, options);
  } catch (error) {
    signalsUserError_('Cannot reach the Signals API at ' + signalsAddress_() + ': ' + error.message);
  }
  var headers = {};
  var all = response.getAllHeaders();
  Object.keys(all).forEach(function (name) { headers[name.toLowerCase()] = String(all[name]); });
  return {status: response.getResponseCode(), headers: headers, text: response.getContentText()};
}

function signalsAddress_() {
  var url = PropertiesService.getScriptProperties().getProperty(SIGNALS_URL_PROPERTY);
  if (!url) {
    signalsUserError_('This connector has no Signals API address: whoever deployed it sets the script property ' +
      SIGNALS_URL_PROPERTY + ' (Project Settings → Script properties), e.g. https://signals.example.com');
  }
  return String(url).trim().replace(/\/+$/, '');
}

function signalsKey_() {
  var key = PropertiesService.getUserProperties().getProperty(SIGNALS_KEY_PROPERTY);
  if (!key) signalsUserError_('No Signals API key: reconnect the data source and enter your key.');
  return key;
}

/** A record's (or the answer's) value as Looker Studio takes it: times as YYYYMMDDHH, null when absent. */
function signalsValue_(def, record, page) {
  var value;
  if (def.source === 'header') {
    value = page.as_of;
  } else {
    value = def.source === 'answer' ? page.body : record;
    for (var i = 0; i < def.path.length && value !== undefined && value !== null; i++) value = value[def.path[i]];
  }
  if (value === undefined || value === null) return null;
  if (def.type === 'YEAR_MONTH_DAY_HOUR') {
    var match = /^(\d{4})-(\d{2})-(\d{2})T(\d{2})/.exec(String(value));
    return match ? match[1] + match[2] + match[3] + match[4] : null;
  }
  return value;
}

// ---- the cache ---------------------------------------------------------------------------------

/** Until the next hour, when the answers change (or the API's max-age, when shorter). */
function signalsCacheSeconds_(headers) {
  var now = signalsNow_().getTime();
  var seconds = Math.floor((3600000 - now % 3600000) / 1000);
  var match = /max-age=(\d+)/.exec(headers['cache-control'] || '');
  if (match) seconds = Math.min(seconds, Number(match[1]));
  return Math.min(seconds, SIGNALS_CACHE_MAX_SECONDS);
}

function signalsCachePut_(key, text, seconds) {
  if (seconds < 1) return;
  var cache = CacheService.getUserCache();
  if (text.length <= SIGNALS_CACHE_CHUNK_CHARS) {
    cache.put(key, text, seconds);
    return;
  }
  var count = Math.ceil(text.length / SIGNALS_CACHE_CHUNK_CHARS);
  if (count > SIGNALS_CACHE_MAX_CHUNKS) return;
  var pieces = {};
  for (var i = 0; i < count; i++) {
    pieces[key + ':' + i] = text.slice(i * SIGNALS_CACHE_CHUNK_CHARS, (i + 1) * SIGNALS_CACHE_CHUNK_CHARS);
  }
  cache.putAll(pieces, seconds);
  cache.put(key, 'chunks:' + count, seconds);
}

function signalsCacheGet_(key) {
  var cache = CacheService.getUserCache();
  var head = cache.get(key);
  if (head === null || head === undefined) return null;
  if (head.indexOf('chunks:') !== 0) return head;
  var keys = [];
  for (var i = 0; i < Number(head.slice(7)); i++) keys.push(key + ':' + i);
  var pieces = cache.getAll(keys);
  if (keys.some(function (k) { return typeof pieces[k] !== 'string'; })) return null;
  return keys.map(function (k) { return pieces[k]; }).join('');
}

function signalsDigest_(text) {
  var bytes = Utilities.computeDigest(Utilities.DigestAlgorithm.SHA_256, text, Utilities.Charset.UTF_8);
  return bytes.map(function (b) { return ((b + 256) % 256).toString(16).padStart(2, '0'); }).join('');
}

// ---- errors ------------------------------------------------------------------------------------

function signalsUserError_(text, debugText) {
  var error = signalsConnector_().newUserError().setText(text);
  if (debugText) error.setDebugText(debugText);
  error.throwException();
}

/** A refused request, in the API's words (its problem+json), as an error the report's viewers read. */
function signalsRefuse_(response, url) {
  var problem = {};
  try { problem = JSON.parse(response.text) || {}; } catch (ignored) { problem = {}; }
  var status = response.status;
  var detail = problem.detail || problem.title || ('HTTP ' + status);
  var retry = response.headers['retry-after'] || '60';
  var text;
  if (status === 400 && problem.errors && problem.errors.length) {
    text = 'Signals API refused the parameters: ' +
      problem.errors.map(function (e) { return e.name + ': ' + e.reason; }).join('; ');
  } else if (status === 401) {
    text = 'Signals API key refused: ' + detail + ' Reconnect the data source with a valid key.';
  } else if (status === 429 && /privacy-budget/.test(problem.type || '')) {
    text = 'Signals privacy budget: ' + detail;
  } else if (status === 429) {
    text = 'Signals API rate limit reached: retry in ' + retry + ' s.';
  } else if (status === 503) {
    text = 'Signals API busy: retry in ' + retry + ' s. ' + detail;
  } else {
    text = 'Signals API: ' + detail;
  }
  var debug = 'HTTP ' + status + ' ' + url + (problem.request_id ? ' (request_id ' + problem.request_id + ')' : '') +
    ': ' + String(response.text).slice(0, 2000);
  try {
    signalsUserError_(text, debug);
  } catch (error) {
    error.signalsStatus = status;
    throw error;
  }
}
