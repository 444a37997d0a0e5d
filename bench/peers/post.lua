-- SPDX-License-Identifier: Apache-2.0
-- wrk script of benchmark (b): a small non-streaming completion POST.
wrk.method = "POST"
wrk.body = '{"model":"Qwen3.6-35B-A3B","prompt":"a b c d","max_tokens":1,"temperature":0}'
wrk.headers["Content-Type"] = "application/json"
