//! OTLP trace export end to end (feature `otel`, `docs/tracing.md`): a real
//! OTLP/HTTP listener started here receives what `duraq enqueue` and `duraq
//! worker` export when `OTEL_EXPORTER_OTLP_ENDPOINT` points at it, and the
//! test decodes the JSON bodies: the enqueue span, each attempt's span with its
//! name, kind, attributes and status, and the attempt's link to the enqueue
//! span's trace and span ids, which the job stored as its `traceParent`. The
//! spans received are written to `target/otel-spans.json`.
#![cfg(feature = "otel")]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{bin, signal, wait_exit, Db};
use serde_json::{json, Value};

/// OTLP span kinds and status codes (`opentelemetry.proto.trace.v1`).
const KIND_PRODUCER: i64 = 4;
const KIND_CONSUMER: i64 = 5;
const STATUS_ERROR: i64 = 2;

/// Accepts connections on `listener` and sends each `POST /v1/traces` body on
/// `tx`, answering `200 {}` (an OTLP success) on a kept-alive connection.
fn serve(listener: TcpListener, tx: mpsc::Sender<Value>) {
    for stream in listener.incoming() {
        let Ok(stream) = stream else { return };
        let tx = tx.clone();
        std::thread::spawn(move || {
            let _ = serve_connection(stream, &tx);
        });
    }
}

fn serve_connection(stream: TcpStream, tx: &mpsc::Sender<Value>) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line)? == 0 {
            return Ok(());
        }
        let mut length = 0;
        let mut content_type = String::new();
        loop {
            let mut header = String::new();
            reader.read_line(&mut header)?;
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            let (name, value) = header.split_once(':').unwrap_or((header, ""));
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = value.trim().parse().unwrap_or(0),
                "content-type" => content_type = value.trim().to_owned(),
                _ => {}
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        assert!(
            request_line.starts_with("POST /v1/traces "),
            "unexpected request {request_line:?}"
        );
        assert_eq!(
            content_type, "application/json",
            "OTLP/HTTP with JSON bodies"
        );
        let _ = tx.send(serde_json::from_slice(&body).expect("an OTLP JSON body"));
        writer.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}",
        )?;
    }
}

/// One exported span, flattened with its resource's service name.
fn spans_of(export: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for rs in export["resourceSpans"].as_array().into_iter().flatten() {
        let service = attribute(&rs["resource"], "service.name");
        for ss in rs["scopeSpans"].as_array().into_iter().flatten() {
            for span in ss["spans"].as_array().into_iter().flatten() {
                let mut span = span.clone();
                span["service"] = service.clone();
                out.push(span);
            }
        }
    }
    out
}

/// The value of attribute `key` of an OTLP span or resource, as plain JSON.
fn attribute(holder: &Value, key: &str) -> Value {
    let Some(kv) = holder["attributes"]
        .as_array()
        .and_then(|a| a.iter().find(|kv| kv["key"] == key))
    else {
        return Value::Null;
    };
    let v = &kv["value"];
    if let Some(s) = v.get("stringValue") {
        return s.clone();
    }
    if let Some(i) = v.get("intValue") {
        // OTLP JSON writes 64-bit integers as numbers or strings.
        return match i {
            Value::String(s) => json!(s.parse::<i64>().expect("an integer")),
            other => other.clone(),
        };
    }
    v.clone()
}

/// Receives exports until `done` holds for the spans so far, or the deadline.
fn receive_until(
    rx: &mpsc::Receiver<Value>,
    all: &mut Vec<Value>,
    done: impl Fn(&[Value]) -> bool,
) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done(all) {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(export) => all.extend(spans_of(&export)),
            Err(_) => panic!("the listener did not receive the spans in time; got {all:#?}"),
        }
    }
}

fn named<'a>(spans: &'a [Value], name: &str) -> Vec<&'a Value> {
    spans.iter().filter(|s| s["name"] == name).collect()
}

fn run_traced(db: &Db, endpoint: &str, args: &[&str]) -> Value {
    let out = Command::new(bin())
        .arg("--database")
        .arg(db.url())
        .args(args)
        .arg("--json")
        .env_remove("DURAQ_DATABASE_URL")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        .env("OTEL_SERVICE_NAME", "otel-test-producer")
        .output()
        .expect("run duraq");
    assert!(out.status.success(), "duraq {args:?}: {out:?}");
    common::parse_one(&out.stdout)
}

#[test]
fn a_trace_runs_from_the_enqueue_to_each_attempt() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || serve(listener, tx));
    let db = Db::new();
    db.json(&["migrate"]);

    // The producer: `duraq enqueue` starts a trace and the job stores its context.
    let ok = run_traced(&db, &endpoint, &["enqueue", "duraq.noop"])["jobId"]
        .as_str()
        .unwrap()
        .to_owned();
    let failing = run_traced(
        &db,
        &endpoint,
        &[
            "enqueue",
            "duraq.sleep",
            "--args",
            r#"{"ms": 60000}"#,
            "--timeout",
            "1ms",
            "--max-retries",
            "0",
        ],
    )["jobId"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut spans = Vec::new();
    receive_until(&rx, &mut spans, |s| s.len() >= 2);
    let enqueue = named(&spans, "enqueue duraq.noop");
    assert_eq!(enqueue.len(), 1, "{spans:#?}");
    let enqueue = enqueue[0].clone();
    assert_eq!(enqueue["kind"], KIND_PRODUCER);
    assert_eq!(enqueue["service"], "otel-test-producer");
    assert_eq!(attribute(&enqueue, "messaging.system"), "duraq");
    assert_eq!(attribute(&enqueue, "duraq.job.id"), ok.as_str());
    let (trace_id, span_id) = (
        enqueue["traceId"].as_str().unwrap().to_owned(),
        enqueue["spanId"].as_str().unwrap().to_owned(),
    );
    assert_eq!(trace_id.len(), 32, "hex trace id: {trace_id}");
    let stored = db.job(&ok)["traceParent"].clone();
    assert_eq!(stored, format!("00-{trace_id}-{span_id}-01"));

    // The consumer: a worker process exports each attempt's span on shutdown.
    let mut worker = Command::new(bin())
        .arg("--database")
        .arg(db.url())
        .arg("worker")
        .env_remove("DURAQ_DATABASE_URL")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env("OTEL_SERVICE_NAME", "otel-test-worker")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn worker");
    db.wait_job(&ok, Duration::from_secs(30), |j| j["status"] == "completed");
    db.wait_job(&failing, Duration::from_secs(30), |j| {
        j["status"] == "failed"
    });
    signal(&worker, libc::SIGTERM);
    assert!(wait_exit(&mut worker, Duration::from_secs(30)).success());
    receive_until(&rx, &mut spans, |s| {
        !named(s, "duraq.noop").is_empty() && !named(s, "duraq.sleep").is_empty()
    });

    let attempt = named(&spans, "duraq.noop")[0].clone();
    assert_eq!(attempt["kind"], KIND_CONSUMER);
    assert_eq!(attempt["service"], "otel-test-worker");
    assert_ne!(attempt["traceId"], trace_id.as_str(), "a trace of its own");
    assert_eq!(
        attempt["parentSpanId"], "",
        "a root span, linked, not parented"
    );
    for (key, want) in [
        ("messaging.system", json!("duraq")),
        ("messaging.destination.name", json!("default")),
        ("duraq.job.id", json!(ok)),
        ("duraq.job.name", json!("duraq.noop")),
        ("duraq.queue", json!("default")),
        ("duraq.attempt", json!(1)),
        ("duraq.outcome", json!("completed")),
    ] {
        assert_eq!(attribute(&attempt, key), want, "{key} of {attempt:#}");
    }
    let links = attempt["links"].as_array().expect("links");
    assert_eq!(links.len(), 1, "{attempt:#}");
    assert_eq!(links[0]["traceId"], trace_id.as_str());
    assert_eq!(links[0]["spanId"], span_id.as_str());
    assert_ne!(attempt["status"]["code"], STATUS_ERROR);

    let failed = named(&spans, "duraq.sleep")[0].clone();
    assert_eq!(failed["status"]["code"], STATUS_ERROR, "{failed:#}");
    assert_eq!(attribute(&failed, "duraq.outcome"), "failed");
    let producer = named(&spans, "enqueue duraq.sleep")[0].clone();
    assert_eq!(failed["links"][0]["spanId"], producer["spanId"]);

    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("../otel-spans.json");
    let text = serde_json::to_string_pretty(&spans).unwrap();
    std::fs::write(&path, &text).expect("write the received spans");
    println!(
        "spans received by the OTLP listener ({}):\n{text}",
        path.display()
    );
}
