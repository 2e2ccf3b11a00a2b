-- token_bucket: state struct '<ddd'; params capacity, rate, warmup_s, cold_factor. Without
-- warm-up (credit: the tokens' worth in µs of refill, updated_at µs, unused); with warm-up
-- (tokens, updated_at s, ramp start s), as the pure transition. Like it, a rejection also
-- stores the state at now: the refill is re-based on every call, so later float roundings
-- match the memory store.
local warmup = warmup_s
local stored = redis.call('GET', KEYS[1])

if warmup <= 0 then
  local interval, full, t = interval_us, full_us, now_us
  local credit = full
  if stored then
    local stored_credit, updated = struct.unpack('<dd', stored)
    credit = math.min(full, stored_credit + math.max(0, t - updated))
  end
  local c = take(credit / interval)
  local need = c * interval
  if credit >= need then
    credit = credit - need
    save(KEYS[1], struct.pack('<ddd', credit, t, t))
    return struct.pack(REPLY, 1, credit / interval, 0, (full - credit) / 1000000, 0, c)
  end
  save(KEYS[1], struct.pack('<ddd', credit, t, t))
  local retry = INF
  if c <= capacity then
    retry = math.ceil(need - credit) / 1000000
  end
  return struct.pack(REPLY, 0, credit / interval, retry, (full - credit) / 1000000, 0, cost)
end

-- warm-up: the refill rate ramps from rate / cold_factor to rate over warmup seconds
local f = 1.0 / cold_factor

local function filled(u)
  if u <= warmup then
    return rate * (f * u + (1.0 - f) * u * u / (2.0 * warmup))
  end
  return rate * (warmup * (1.0 + f) / 2.0 + (u - warmup))
end

local function time_to_fill(amount)
  local units = amount / rate
  local ramp = warmup * (1.0 + f) / 2.0
  if units > ramp then
    return warmup + (units - ramp)
  end
  if f == 1.0 then
    return units
  end
  local a = (1.0 - f) / (2.0 * warmup)
  return (-f + math.sqrt(f * f + 4.0 * a * units)) / (2.0 * a)
end

local tokens, start = capacity, now
if stored then
  local updated
  tokens, updated, start = struct.unpack('<ddd', stored)
  local elapsed = math.max(now, updated) - start
  tokens = tokens + (filled(elapsed) - filled(math.max(0.0, updated - start)))
  if tokens >= capacity then
    tokens, start = capacity, now
  end
end
local into = now - start
local done = filled(into)
local reset = 0.0
if tokens < capacity then
  reset = time_to_fill(done + capacity - tokens) - into
end
local c = take(tokens)
if tokens >= c then
  tokens = tokens - c
  save(KEYS[1], struct.pack('<ddd', tokens, now, start))
  return struct.pack(REPLY, 1, tokens, 0, time_to_fill(done + capacity - tokens) - into, 0, c)
end
save(KEYS[1], struct.pack('<ddd', tokens, now, start))
local retry = INF
if c <= capacity then
  retry = time_to_fill(done + c - tokens) - into
end
return struct.pack(REPLY, 0, tokens, retry, reset, 0, cost)
