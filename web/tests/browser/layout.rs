//! Every page at 1280 and 390 px wide, seeded with long names, a long error,
//! two job names no worker handles in one queue, and a workflow: no page
//! scrolls sideways (on a phone a table wider than the screen scrolls inside
//! its own box; at 1280 px no table does), and no table cell breaks its text
//! over two lines, except a last error, the one cell allowed to wrap, and a
//! queue's cell of badges, which may put a whole badge on the next line. Each page is
//! screenshotted at both widths (`layout-<width>-<page>.png`) to be looked at.

use duraq_core::{enqueue_workflow, EnqueueOptions, NewJob, Workflow};
use duraq_web::WebOptions;
use serde_json::{json, Value};

use crate::dash::{open, Dash};
use crate::support::{self, Page};
use crate::views::retrying;

/// In the page: how far the document is wider than the window, and each
/// table cell (`table[data-table]`, not a last error) whose text sits on
/// more than one line.
const MEASURE: &str = r#"
const doc = document.documentElement;
const wrapped = [];
const breaks = (el, cell) => {
  const range = document.createRange();
  range.selectNodeContents(el);
  const tops = Array.from(range.getClientRects()).filter(r => r.width > 0).map(r => r.top);
  if (tops.length === 0) return false;
  const line = parseFloat(getComputedStyle(cell).lineHeight) || 20;
  return Math.max(...tops) - Math.min(...tops) > line * 0.75;
};
const name = el => el.closest("table").getAttribute("data-table") + ": " + el.textContent.trim();
document.querySelectorAll("table[data-table] td:not(.error):not(.badges), table[data-table] th").forEach(cell => {
  if (breaks(cell, cell)) wrapped.push(name(cell));
});
// A cell of badges may put a badge on the next line, never break one.
document.querySelectorAll("table[data-table] td.badges").forEach(cell => {
  cell.querySelectorAll(":scope > *").forEach(part => {
    if (breaks(part, cell)) wrapped.push(name(part));
  });
});
// Tables whose box scrolls sideways: allowed on a phone, not on a desktop.
const scrolls = [];
document.querySelectorAll("div.table").forEach(box => {
  if (box.scrollWidth > box.clientWidth + 1) {
    const t = box.querySelector("table[data-table]");
    scrolls.push((t ? t.getAttribute("data-table") : "?") + " " + (box.scrollWidth - box.clientWidth) + " px");
  }
});
// The outermost elements that reach past the window, to name in a failure.
const wide = [];
document.querySelectorAll("body *").forEach(el => {
  const over = el.getBoundingClientRect().right > doc.clientWidth + 1;
  const parent = el.parentElement.getBoundingClientRect().right > doc.clientWidth + 1;
  if (over && !parent && !el.closest("div.table")) {
    wide.push(el.tagName.toLowerCase() + (el.className ? "." + el.className : "") +
      " " + Math.round(el.getBoundingClientRect().width) + "px");
  }
});
return { overflow: doc.scrollWidth - doc.clientWidth, wrapped: wrapped, wide: wide, scrolls: scrolls };
"#;

/// From this width on, no table may scroll inside its box either.
const DESKTOP: u32 = 1280;

async fn seed(dash: &Dash) -> Vec<(String, &'static str)> {
    let long_queue = EnqueueOptions::new().queue("reports-monthly-eu-central");
    dash.enqueue(
        "reports.generate_monthly_invoice_summary",
        json!({"month": "2026-11"}),
        long_queue.clone(),
    )
    .await;
    // A second name no worker handles in the same queue: a second badge.
    dash.enqueue(
        "reports.render_quarterly_revenue_forecast",
        json!({"quarter": "2026-Q4"}),
        long_queue,
    )
    .await;
    let error = "upstream responded 503 Service Unavailable after 30s: \
                 connection reset by peer while reading the response body\n  at sync()";
    let failed = dash
        .failed("charge_card", json!({"order": 7}), "billing", error)
        .await;
    let retry = retrying(dash, "sync_crm_contacts_incremental", error).await;
    dash.completed("resize_image").await;
    dash.running("transcode_video").await;
    let later = EnqueueOptions::new().run_in(std::time::Duration::from_secs(5400));
    dash.enqueue("send_weekly_digest_email", json!({"user": 42}), later)
        .await;
    dash.scheduled("digest:user:42", "send_digest", json!({"user": 42}))
        .await;
    let tenant = EnqueueOptions::new().fairness_key("tenant:acme-corporation-eu-west-1");
    dash.enqueue("import_customer_records", json!({"row": 1}), tenant)
        .await;
    let job = |name: &str| NewJob::new(name, json!([]), EnqueueOptions::new()).unwrap();
    let flow = Workflow::new("onboard_customer")
        .step("signup", job("signup"))
        .step_after("welcome", job("welcome_email"), ["signup"])
        .step_after("risk", job("risk_check"), ["signup"]);
    let flow = enqueue_workflow(&dash.store, flow).await.unwrap();
    vec![
        ("/".into(), "overview"),
        ("/queues".into(), "queues"),
        ("/queues/default".into(), "queues"),
        ("/jobs".into(), "jobs"),
        ("/jobs?status=failed".into(), "jobs"),
        (format!("/jobs/{failed}"), "job"),
        (format!("/jobs/{retry}"), "job"),
        ("/retries".into(), "retries"),
        ("/scheduled".into(), "scheduled"),
        ("/retries/confirm?action=run-now".into(), "retries"),
        (
            "/jobs/bulk/confirm?action=retry&status=failed".into(),
            "bulk",
        ),
        ("/workflows".into(), "workflows"),
        (format!("/workflows/{}", flow.workflow_id), "workflow"),
        ("/workers".into(), "workers"),
        ("/keys?key=digest%3Auser%3A42".into(), "keys"),
        ("/jobs/search?id=nothing-like-it".into(), "jobs"),
    ]
}

/// What is wrong with the page as shown: how far it scrolls sideways, the
/// cells that break, and the tables whose box scrolls sideways.
async fn measure(page: &Page) -> (String, Vec<String>, Vec<String>) {
    let v: Value = page.js(MEASURE, vec![]).await;
    let overflow = match v["overflow"].as_i64().unwrap_or(i64::MAX) {
        n if n > 0 => format!("{n} px wider than the window: {}", v["wide"]),
        _ => String::new(),
    };
    let list = |key: &str| -> Vec<String> {
        let items = v[key].as_array().cloned().unwrap_or_default();
        items
            .iter()
            .filter_map(|w| w.as_str().map(str::to_owned))
            .collect()
    };
    (overflow, list("wrapped"), list("scrolls"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_page_scrolls_sideways_or_breaks_a_cell_at_1280_or_390_px() {
    let dash = Dash::start(WebOptions::new()).await;
    let pages = seed(&dash).await;

    support::run("layout", move |page| async move {
        let mut bad = Vec::new();
        for width in [1280, 390] {
            page.set_width(width).await;
            for (n, (path, name)) in pages.iter().enumerate() {
                open(&page, &dash.url(path), name).await;
                let (overflow, wrapped, scrolls) = measure(&page).await;
                if !overflow.is_empty() {
                    bad.push(format!("{width} px {path}: {overflow}"));
                }
                if width >= DESKTOP {
                    for table in scrolls {
                        bad.push(format!("{width} px {path}: a table scrolls: {table}"));
                    }
                }
                for cell in wrapped {
                    bad.push(format!("{width} px {path}: a cell breaks: {cell}"));
                }
                page.screenshot(&format!("layout-{width}-{n:02}-{name}"))
                    .await;
            }
        }
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    })
    .await;
}
