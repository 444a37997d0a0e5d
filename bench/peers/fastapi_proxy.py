# SPDX-License-Identifier: Apache-2.0
"""The seed's gateway, reduced to its proxy: FastAPI + httpx.AsyncClient streaming passthrough.

Every path and method is forwarded to UPSTREAM (e.g. http://127.0.0.1:30000) and the response
is relayed chunk by chunk as httpx receives it (aiter_raw, so bytes are not re-encoded). Run as
one uvicorn worker:

    UPSTREAM=http://127.0.0.1:30000 python3 -m uvicorn fastapi_proxy:app --app-dir bench/peers \
        --host 127.0.0.1 --port 8080 --workers 1 --no-access-log

The connection pool is unbounded and there is no timeout, so 2,000 held-open streams all reach
the backend (httpx's defaults would cap the pool at 100 connections and time out after 5 s).
"""
import os

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse
from starlette.background import BackgroundTask

UPSTREAM = os.environ.get("UPSTREAM", "http://127.0.0.1:30000")
HOP_BY_HOP = {
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
    "trailers", "transfer-encoding", "upgrade", "host",
}

app = FastAPI()
client = httpx.AsyncClient(
    base_url=UPSTREAM,
    timeout=httpx.Timeout(None),
    limits=httpx.Limits(max_connections=None, max_keepalive_connections=1024),
)


@app.api_route("/{path:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"])
async def proxy(path: str, request: Request):
    headers = [(k, v) for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP]
    upstream_req = client.build_request(
        request.method, "/" + path, params=request.query_params, headers=headers,
        content=await request.body(),
    )
    upstream = await client.send(upstream_req, stream=True)
    out_headers = {k: v for k, v in upstream.headers.items() if k.lower() not in HOP_BY_HOP}
    return StreamingResponse(
        upstream.aiter_raw(), status_code=upstream.status_code, headers=out_headers,
        background=BackgroundTask(upstream.aclose),
    )


@app.on_event("shutdown")
async def _close() -> None:
    await client.aclose()
