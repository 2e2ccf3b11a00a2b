-- concurrency (acquire): state struct '<d' (in_flight); params max_in_flight, hold_s. No TTL
-- (ttl_ms 0): an in-flight count must not expire while its requests run;
-- concurrency_release.lua gives slots back.
local hold = hold_s
local in_flight = 0
local stored = redis.call('GET', KEYS[1])
if stored then
  in_flight = struct.unpack('<d', stored)
end
local c = take(max_in_flight - in_flight)
if in_flight + c <= max_in_flight then
  in_flight = in_flight + c
  save(KEYS[1], struct.pack('<d', in_flight))
  return struct.pack(REPLY, 1, max_in_flight - in_flight, 0, hold, 0, c)
end
local retry = INF
if c <= max_in_flight then
  retry = hold
end
return struct.pack(REPLY, 0, max_in_flight - in_flight, retry, hold, 0, cost)
