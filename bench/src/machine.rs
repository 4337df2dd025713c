//! The machine a report was measured on, read from `/proc` (Linux) so the table
//! always travels with its context: figures from a 2-vCPU VM under a parallel
//! build are not figures from an idle workstation.

use serde_json::{json, Value};

/// CPU model, logical CPUs, memory, kernel and the load average now.
pub fn describe() -> Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map(|m| m.trim().to_owned());
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_mib = meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kib| kib.parse::<u64>().ok())
        .map(|kib| kib / 1024);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .ok()
        .map(|s| s.trim().to_owned());
    let loadavg = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "));
    json!({
        "cpu": model,
        "logical_cpus": std::thread::available_parallelism().map(|n| n.get()).ok(),
        "memory_mib": mem_mib,
        "kernel": kernel,
        "loadavg_at_report": loadavg,
    })
}

/// A one-line summary for the table header.
pub fn summary(machine: &Value) -> String {
    format!(
        "{} × {}, {} MiB RAM, Linux {}",
        machine["logical_cpus"],
        machine["cpu"].as_str().unwrap_or("unknown CPU"),
        machine["memory_mib"],
        machine["kernel"].as_str().unwrap_or("?"),
    )
}
