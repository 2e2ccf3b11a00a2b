-- Shared head of every decision script (prepended by scripts.py; Redis has no include).
-- ARGV: now ('' = server TIME), cost, want (a lease's largest grant; = cost otherwise),
-- ttl_ms (0 = no expiry), then the algorithm's params in dataclass field order.
-- Numbers travel as strings both ways: Redis turns a Lua number reply into an integer and
-- redis.call() formats a Lua number with %.14g, so every number goes through fmt().
local now
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) + tonumber(t[2]) / 1000000
else
  now = tonumber(ARGV[1])
end
local cost = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local ttl_ms = tonumber(ARGV[4])
local INF = math.huge

local function fmt(x)
  return string.format('%.17g', x)
end

-- one bulk string "allowed remaining retry reset delay granted": one format, one reply item
local function reply(allowed, remaining, retry, reset, delay, granted)
  return string.format('%d %.17g %.17g %.17g %.17g %.17g', allowed and 1 or 0, remaining, retry, reset, delay or 0,
    granted or cost)
end

-- write a state and its TTL in one command (never SET then EXPIRE)
local function save(key, value)
  if ttl_ms > 0 then
    redis.call('SET', key, value, 'PX', ttl_ms)
  else
    redis.call('SET', key, value)
  end
end

-- space-separated numbers of a stored state
local function fields(value)
  local out = {}
  for word in string.gmatch(value, '%S+') do
    out[#out + 1] = tonumber(word)
  end
  return out
end

-- the cost to try: a lease takes the largest whole amount <= want that fits in room,
-- never less than the request's own cost
local function take(room)
  if want <= cost then
    return cost
  end
  local g = math.floor(room)
  if g > want then
    g = want
  end
  if g > cost then
    return g
  end
  return cost
end
