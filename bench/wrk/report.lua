-- What every script of the bench prints when wrk is done: one line the bench reads.
local report = {}

function report.done(summary, latency, requests)
  local errors = summary.errors
  io.write(string.format(
    'bench-result {"requests":%d,"duration_us":%d,"bytes":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"p50_us":%d,"p99_us":%d}\n',
    summary.requests, summary.duration, summary.bytes,
    errors.connect, errors.read, errors.write, errors.status, errors.timeout,
    latency:percentile(50), latency:percentile(99)))
end

return report
