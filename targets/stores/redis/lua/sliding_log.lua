-- sliding_log: KEYS[1] a list of the admitted requests, oldest first, each struct '<dd'
-- (expiry = t + W in µs, running cost sum); KEYS[2] the meta struct '<dddd' (base, last, n, oldest):
-- last is the running sum of the newest entry and base that of the newest expired one, so the
-- admitted cost in (t - W, t] is last - base, exactly the pure transition's arithmetic; n and
-- oldest (count and first expiry of the live entries) let the common call, where nothing
-- expired, skip reading the list. A list, not a sorted set: entries arrive in expiry order
-- (server time does not step back), so RPUSH appends and LPOP drops the expired head, with no
-- score to format or parse. Params limit, window_s.
local w, t = window_us, now_us
local log, meta = KEYS[1], KEYS[2]
local base, last, n, oldest = 0.0, 0.0, 0, INF
local stored = redis.call('GET', meta)
local changed = false

local function entry(i)
  return struct.unpack('<dd', redis.call('LINDEX', log, i))
end

if stored then
  base, last, n, oldest = struct.unpack('<dddd', stored)
  if n > 0 and oldest <= t then
    -- entries 0 .. k-1 have expired (0 has: oldest <= now): k by doubling, then bisection,
    -- O(log k) reads; lo is an expired index, hi the first live one (or n)
    local lo, hi, step = 0, n, 1
    oldest = INF
    while lo + step < n do
      local e = entry(lo + step)
      if e > t then
        hi, oldest = lo + step, e
        break
      end
      lo, step = lo + step, step * 2
    end
    while hi - lo > 1 do
      local mid = math.floor((lo + hi) / 2)
      local e = entry(mid)
      if e > t then
        hi, oldest = mid, e
      else
        lo = mid
      end
    end
    local expired = redis.call('LPOP', log, hi)
    base = select(2, struct.unpack('<dd', expired[#expired])) -- the newest expired entry's sum
    n = n - hi
    changed = true
  end
else
  redis.call('DEL', log) -- a log must never outlive its meta (both get the same TTL)
end

local total = 0.0
if n > 0 then
  total = last - base
end
local c = take(limit - total)
if total + c <= limit then
  last, n = base + total + c, n + 1
  if oldest == INF then
    oldest = t + w
  end
  redis.call('RPUSH', log, struct.pack('<dd', t + w, last))
  if ttl_ms ~= '0' then
    redis.call('PEXPIRE', log, ttl_ms)
  end
  save(meta, struct.pack('<dddd', base, last, n, oldest))
  return struct.pack(REPLY, 1, limit - total - c, 0, w / 1000000, 0, c)
end
if changed then
  -- the pruned log's new base, count and oldest expiry; KEEPTTL: the meta must expire with the
  -- log, whose TTL only an admit extends
  redis.call('SET', meta, struct.pack('<dddd', base, last, n, oldest), 'KEEPTTL')
end
local retry = INF
if c <= limit then
  -- the first entry whose running sum reaches base + total + c - limit must expire:
  -- bisection by index, O(log n) reads, on a rejection only
  local target = base + total + c - limit
  local lo, hi = 0, n - 1
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local _, sum = entry(mid)
    if sum >= target then
      hi = mid
    else
      lo = mid + 1
    end
  end
  retry = (entry(lo) - t) / 1000000
end
local reset = 0.0
if n > 0 then
  reset = (entry(-1) - t) / 1000000
end
return struct.pack(REPLY, 0, math.max(0.0, limit - total), retry, reset, 0, cost)
