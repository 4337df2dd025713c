// Enqueue a job through duraq's HTTP API and wait for it: Node 18+'s global
// fetch, no packages.
//
// DURAQ_URL (default http://127.0.0.1:8080) is where `duraq web` listens and
// DURAQ_WEB_TOKEN its token; the first argument, if any, is the Idempotency-Key.

const base = (process.env.DURAQ_URL ?? "http://127.0.0.1:8080").replace(/\/$/, "");
const token = process.env.DURAQ_WEB_TOKEN ?? "";

/** [status, JSON answer] of one request; errors are answers too. */
async function call(method, path, body, headers = {}) {
  const init = { method, headers: { ...headers } };
  if (token) init.headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(base + path, init);
  return [response.status, await response.json()];
}

// A value the API refuses: 422 with the same code `duraq enqueue` prints.
let [status, answer] = await call("POST", "/api/v1/jobs", { job: "duraq.echo", runIn: "soon" });
console.log("refused", status, answer.error.code);

const job = { job: "duraq.echo", args: { hello: "world" }, timeout: "30s", maxRetries: 3 };
const headers = process.argv[2] ? { "Idempotency-Key": process.argv[2] } : {};
[status, answer] = await call("POST", "/api/v1/jobs", job, headers);
if (status !== 200 && status !== 201) {
  console.error("error", status, answer.error.code);
  process.exit(1);
}
const jobId = answer.jobId;
console.log("enqueued", status, answer.outcome);

// Wait up to 30 s; "done" is false if the job is still running by then.
[status, answer] = await call("GET", `/api/v1/jobs/${jobId}/wait?timeout=30s`);
console.log("done", JSON.stringify(answer.done), answer.job.status, jobId);
