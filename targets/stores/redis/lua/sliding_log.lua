-- sliding_log: KEYS[1] a sorted set of admitted requests, score = expiry (t + W), member =
-- "<seq as 16 hex digits>:<running cost sum>"; KEYS[2] the meta "seq base last n oldest":
-- last is the running sum of the newest entry and base that of the newest expired one, so the
-- admitted cost in (t - W, t] is last - base, exactly the pure transition's arithmetic; n and
-- oldest (count and first expiry of the live entries) let the common call, where nothing
-- expired, skip the sorted-set range reads. The hex seq keeps equal expiries in arrival order
-- and members unique. Params limit, window_s.
local limit, w = tonumber(ARGV[5]), tonumber(ARGV[6])
local log, meta = KEYS[1], KEYS[2]
local seq, base, last, n, oldest = 0, 0.0, 0.0, 0, INF
local stored = redis.call('GET', meta)
local changed = false
if stored then
  local s = fields(stored)
  seq, base, last, n, oldest = s[1], s[2], s[3], s[4], s[5]
  if n > 0 and oldest <= now then
    local expired = redis.call('ZREVRANGEBYSCORE', log, fmt(now), '-inf', 'LIMIT', 0, 1)
    base = tonumber(string.sub(expired[1], 18))
    n = n - redis.call('ZREMRANGEBYSCORE', log, '-inf', fmt(now))
    oldest = INF
    if n > 0 then
      oldest = tonumber(redis.call('ZRANGE', log, 0, 0, 'WITHSCORES')[2])
    end
    changed = true
  end
else
  redis.call('DEL', log) -- a log must never outlive its meta (both get the same TTL)
end

local function save_meta()
  save(meta, string.format('%.17g %.17g %.17g %.17g %.17g', seq, base, last, n, oldest))
end

local total = 0.0
if n > 0 then
  total = last - base
end
local c = take(limit - total)
if total + c <= limit then
  seq, last, n = seq + 1, base + total + c, n + 1
  if oldest == INF then
    oldest = now + w
  end
  redis.call('ZADD', log, fmt(now + w), string.format('%016x:%.17g', seq, last))
  if ttl_ms > 0 then
    redis.call('PEXPIRE', log, ttl_ms)
  end
  save_meta()
  return reply(true, limit - total - c, 0, w, 0, c)
end
if changed then
  save_meta() -- the pruned log's new base, count and oldest expiry
end
local retry = INF
if c <= limit then
  -- the first entry whose running sum reaches base + total + c - limit must expire:
  -- binary search by rank, O(log^2 n), on a rejection only
  local target = base + total + c - limit
  local lo, hi = 0, n - 1
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local m = redis.call('ZRANGE', log, mid, mid)[1]
    if tonumber(string.sub(m, 18)) >= target then
      hi = mid
    else
      lo = mid + 1
    end
  end
  retry = tonumber(redis.call('ZRANGE', log, lo, lo, 'WITHSCORES')[2]) - now
end
local reset = 0.0
if n > 0 then
  reset = tonumber(redis.call('ZRANGE', log, -1, -1, 'WITHSCORES')[2]) - now
end
return reply(false, math.max(0.0, limit - total), retry, reset)
