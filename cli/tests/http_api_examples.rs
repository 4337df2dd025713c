//! The HTTP API's examples in `docs/http-api.md` run as written: the Python
//! (standard library) and the Node (global `fetch`) script each enqueue a
//! built-in job through a real `duraq web`, see a bad value refused with its
//! status and code, and wait until a real `duraq worker` (another process)
//! has completed the job; run again with the same Idempotency-Key they are
//! answered with the same job.

mod common;

use std::process::Command;
use std::time::Duration;

use common::web::spawn_web;
use common::*;

const TOKEN: &str = "examples-token-0123456789";
const DOC: &str = include_str!("../../docs/http-api.md");
const PYTHON: &str = include_str!("../../docs/http-api/enqueue_and_wait.py");
const NODE: &str = include_str!("../../docs/http-api/enqueue_and_wait.mjs");

/// The lines `program script key` prints against `addr`.
fn run(program: &str, script: &str, addr: std::net::SocketAddr, key: &str) -> Vec<Vec<String>> {
    let path = format!("{}/../docs/http-api/{script}", env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(program)
        .arg(path)
        .arg(key)
        .env("DURAQ_URL", format!("http://{addr}"))
        .env("DURAQ_WEB_TOKEN", TOKEN)
        .output()
        .expect("run the example");
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    (stdout.lines())
        .map(|l| l.split(' ').map(str::to_owned).collect())
        .collect()
}

/// Runs an example twice with one key: (first job id, second job id).
fn check(program: &str, script: &str, addr: std::net::SocketAddr, key: &str) -> String {
    let first = run(program, script, addr, key);
    assert_eq!(first[0], ["refused", "422", "invalid-duration"]);
    assert_eq!(first[1], ["enqueued", "201", "created"]);
    assert_eq!(first[2][..3], ["done", "true", "completed"]);
    let again = run(program, script, addr, key);
    assert_eq!(again[1], ["enqueued", "200", "replayed"]);
    assert_eq!(again[2][..3], ["done", "true", "completed"]);
    assert_eq!(again[2][3], first[2][3], "the same job");
    first[2][3].clone()
}

#[test]
fn the_python_and_node_examples_enqueue_and_wait() {
    for example in [PYTHON, NODE] {
        assert!(
            DOC.contains(example.trim()),
            "docs/http-api.md shows the example file"
        );
    }
    let db = Db::new();
    db.enqueue(&["duraq.noop"]); // `duraq web` serves an existing database
    let (web, addr) = spawn_web(&db, Some(TOKEN), &[]);
    let mut worker = db.spawn_worker(&[]);
    let python = check("python3", "enqueue_and_wait.py", addr, "python-example");
    let node = check("node", "enqueue_and_wait.mjs", addr, "node-example");
    assert_ne!(python, node);
    assert_eq!(
        db.job(&python)["args"],
        serde_json::json!({"hello": "world"})
    );
    assert_eq!(db.job(&node)["timeoutMs"], 30_000);
    signal(&worker, libc::SIGTERM);
    assert!(wait_exit(&mut worker, Duration::from_secs(30)).success());
    web.stop();
}
