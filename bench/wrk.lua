-- wrk script for every API benchmark: the caller's key, the method, and a machine-readable
-- summary. BENCH_KEY is the API key; BENCH_METHOD is GET (default) or POST (empty body).
local key = os.getenv("BENCH_KEY")
wrk.method = os.getenv("BENCH_METHOD") or "GET"
wrk.headers["Accept"] = "application/json"
if key and key ~= "" then
  wrk.headers["Authorization"] = "Bearer " .. key
end
if wrk.method == "POST" then
  wrk.body = ""
  wrk.headers["Content-Length"] = "0"
end

-- One line the harness parses; errors.status counts every answer that was not 2xx or 3xx.
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH {"requests": %d, "duration_us": %d, "p50_us": %d, "p99_us": %d, ' ..
    '"connect": %d, "read": %d, "write": %d, "status": %d, "timeout": %d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.connect, e.read, e.write, e.status, e.timeout))
end
