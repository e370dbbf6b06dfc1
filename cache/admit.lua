-- One round trip per request of an authenticated caller: the moving-window rate limit of a
-- subscription and the cached response body. (A valid key is never refused for other keys'
-- failures from its address: the address block of fail.lua answers wrong keys only.)
--
-- KEYS[1] rate window (sorted set of request ids scored by server time in microseconds)
-- KEYS[2] cached response body, or "" to skip
-- KEYS[3] (optional) the sorted set of requests asked recently, by how many subscriptions asked
--         each (precompute reads it), or ""
-- KEYS[4] (optional) the subscription's privacy ledger (cache/charge.lua), read only, or ""
-- KEYS[5] (optional, with KEYS[3]) the name, less its day, of the set of requests the subscription
--         asked in a UTC day: "<prefix>asked-by:<subscription>:", to which the script appends the
--         day by the Redis server's clock (days since 1970-01-01). A request counts in KEYS[3] only
--         the first time the subscription asks it that day, and only among the first ARGV[7]
--         distinct requests it asks that day (the set's bound). Absent or "": every accepted request counts.
--         (The one key the script names itself, so that every worker agrees on the day; the keys
--         here already span Cluster slots: Redis Cluster is not supported, caching-and-limits.md.)
-- ARGV[1] limit (requests per window)   ARGV[2] window in microseconds
-- ARGV[3] request id (unique member)
-- ARGV[4] absent: count the request if it is accepted;
--         "replay": sent again after a lost answer (a request already counted is accepted);
--         "peek": count nothing, only report (for a request refused before the limit, e.g. 403)
-- ARGV[5] (with KEYS[3]) the request's identity, counted once more in KEYS[3] when it is accepted
--         (with KEYS[5]: and not yet asked by the subscription that day)
-- ARGV[6] (with KEYS[4]) the answer's name in the ledger ("" without a ledger)
-- ARGV[7] (with KEYS[5]) the most distinct requests a subscription's day counts (cache.gate.MOST_ASKED_A_DAY)
--
-- Returns {allowed (1|0), remaining, micros until a slot frees (until the oldest counted request
--          leaves the window; refused: until a request would be accepted),
--          blocked_by ("" | "rate"), body or false, milliseconds the body has left,
--          and with KEYS[4], accepted: the ledger's spent and what the answer was charged so far
--          (so an answer already paid for needs no second round trip)}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local mode = ARGV[4]

-- Micros until a window holding `count` entries has fewer than `most`: until its
-- (count - most)-th oldest entry leaves it.
local function freeing(key, count, most)
  local entry = redis.call('ZRANGE', key, count - most, count - most, 'WITHSCORES')
  return tonumber(entry[2]) + window - now
end

redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])

if mode == 'peek' then
  -- Nothing is counted: the subscription's window as it stands, as a request would find it.
  if count >= limit then
    return {0, 0, freeing(KEYS[1], count, limit), 'rate', false, 0}
  end
  local reset = 0
  if count > 0 then reset = freeing(KEYS[1], count, count) end  -- the oldest entry's exit
  return {1, limit - count, reset, '', false, 0}
end

if mode == 'replay' and redis.call('ZSCORE', KEYS[1], ARGV[3]) then
  count = count - 1  -- counted by the first send: as if it were being counted now
elseif count >= limit then
  return {0, 0, freeing(KEYS[1], count, limit), 'rate', false, 0}
else
  redis.call('ZADD', KEYS[1], now, ARGV[3])
end
redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
if KEYS[3] and KEYS[3] ~= '' and mode ~= 'replay' then
  local first = 1
  if KEYS[5] and KEYS[5] ~= '' then
    -- Counted once per subscription and UTC day: the day's set of what it asked, gone when the
    -- day ends (its name is never looked at again).
    local days = math.floor(tonumber(t[1]) / 86400)
    local asked_by = KEYS[5] .. days
    if redis.call('SISMEMBER', asked_by, ARGV[5]) == 1 then
      first = 0
    elseif redis.call('SCARD', asked_by) < tonumber(ARGV[7]) then
      redis.call('SADD', asked_by, ARGV[5])
      redis.call('EXPIREAT', asked_by, (days + 1) * 86400)
    else
      first = 0  -- past the day's bound: the subscription's further requests count for nothing
    end
  end
  if first == 1 then redis.call('ZINCRBY', KEYS[3], 1, ARGV[5]) end
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local body = false
local ttl = 0
if KEYS[2] ~= '' then
  body = redis.call('GET', KEYS[2])
  if body then
    ttl = redis.call('PTTL', KEYS[2])
  end
end
if KEYS[4] and KEYS[4] ~= '' then
  local ledger = redis.call('HMGET', KEYS[4], 'spent', 'a:' .. ARGV[6])
  return {1, limit - count - 1, tonumber(oldest[2]) + window - now, '', body, ttl,
          tonumber(ledger[1] or '0'), tonumber(ledger[2] or '0')}
end
return {1, limit - count - 1, tonumber(oldest[2]) + window - now, '', body, ttl}
