#!/usr/bin/env python3
"""Enqueue a job through duraq's HTTP API and wait for it: standard library only.

DURAQ_URL (default http://127.0.0.1:8080) is where `duraq web` listens and
DURAQ_WEB_TOKEN its token; the first argument, if any, is the Idempotency-Key.
"""
import json
import os
import sys
import urllib.error
import urllib.request

BASE = os.environ.get("DURAQ_URL", "http://127.0.0.1:8080").rstrip("/")
TOKEN = os.environ.get("DURAQ_WEB_TOKEN", "")


def call(method, path, body=None, headers=None):
    """(status, JSON answer) of one request; errors are answers too."""
    request = urllib.request.Request(BASE + path, method=method, headers=headers or {})
    if TOKEN:
        request.add_header("Authorization", "Bearer " + TOKEN)
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, data, timeout=330) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


# A value the API refuses: 422 with the same code `duraq enqueue` prints.
status, answer = call("POST", "/api/v1/jobs", {"job": "duraq.echo", "runIn": "soon"})
print("refused", status, answer["error"]["code"])

job = {"job": "duraq.echo", "args": {"hello": "world"}, "timeout": "30s", "maxRetries": 3}
headers = {"Idempotency-Key": sys.argv[1]} if len(sys.argv) > 1 else {}
status, answer = call("POST", "/api/v1/jobs", job, headers)
if status not in (200, 201):
    sys.exit(f"error {status} {answer['error']['code']}")
job_id = answer["jobId"]
print("enqueued", status, answer["outcome"])

# Wait up to 30 s; "done" is false if the job is still running by then.
status, answer = call("GET", f"/api/v1/jobs/{job_id}/wait?timeout=30s")
print("done", json.dumps(answer["done"]), answer["job"]["status"], job_id)
