-- token_bucket: state struct '<ddd' (tokens, updated_at, ramp_start: unused without warm-up);
-- params capacity, rate, warmup_s, cold_factor. Like the pure transition, a rejection also
-- stores (tokens, now): the refill is re-based on every call, so later float roundings match
-- the memory store.
local warmup = warmup_s
local stored = redis.call('GET', KEYS[1])

if warmup <= 0 then
  local tokens = capacity
  if stored then
    local stored_tokens, updated = struct.unpack('<dd', stored)
    tokens = math.min(capacity, stored_tokens + math.max(0.0, now - updated) * rate)
  end
  local c = take(tokens)
  if tokens >= c then
    tokens = tokens - c
    save(KEYS[1], struct.pack('<ddd', tokens, now, now))
    return struct.pack(REPLY, 1, tokens, 0, (capacity - tokens) / rate, 0, c)
  end
  save(KEYS[1], struct.pack('<ddd', tokens, now, now))
  local retry = INF
  if c <= capacity then
    retry = (c - tokens) / rate
  end
  return struct.pack(REPLY, 0, tokens, retry, (capacity - tokens) / rate, 0, cost)
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
