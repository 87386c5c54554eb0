-- wrk's script for benchmarks/gateway.py: the gateway's GET as wrk sends it, or its
-- checkout POSTs; done() prints the figures as one JSON line, which the benchmark reads.
--
--   wrk -s benchmarks/gateway.lua URL -- get
--   wrk -s benchmarks/gateway.lua URL -- post <file of slot ids> <threads> <key tag>
--
-- A checkout needs a free slot and a fresh Idempotency-Key: a repeated key would be a
-- replay, a taken slot a 409, and neither measures a checkout. The threads take the slot
-- ids in turns (thread t takes t, t + threads, ...), so no slot is asked for twice.

local threads_set_up = 0

function setup(thread)
  threads_set_up = threads_set_up + 1
  thread:set("thread_number", threads_set_up)
end

function init(args)
  mode = args[1] or "get"
  sent = 0
  if mode == "post" then
    slots = {}
    for line in io.lines(args[2]) do
      if line ~= "" then
        slots[#slots + 1] = line
      end
    end
    thread_count = tonumber(args[3])
    key_tag = args[4]
  end
end

function request()
  if mode ~= "post" then
    return wrk.request()
  end
  sent = sent + 1
  local turn = (sent - 1) * thread_count + thread_number
  local slot = slots[(turn - 1) % #slots + 1]  -- past the last slot: 409s, counted in done()
  local headers = {}
  for name, value in pairs(wrk.headers) do
    headers[name] = value
  end
  headers["Content-Type"] = "application/json"
  headers["Idempotency-Key"] = string.format("%s-%d-%d", key_tag, thread_number, sent)
  local body = string.format(
    '{"slot_id": "%s", "party_size": 1, "payment_mode": "card"}', slot
  )
  return wrk.format("POST", wrk.path, headers, body)
end

function done(summary, latency, requests)
  local errors = summary.errors
  io.write(string.format(
    '{"requests": %d, "duration_us": %d, "status_errors": %d, "socket_errors": %d, '
      .. '"p50_us": %d, "p99_us": %d}\n',
    summary.requests, summary.duration, errors.status,
    errors.connect + errors.read + errors.write + errors.timeout,
    latency:percentile(50), latency:percentile(99)
  ))
end
