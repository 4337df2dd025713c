//! The jobs page's search form on a phone and on a desktop: at 390 px it is
//! folded under its summary ("Filters", and how many are set) so the first
//! job shows on the first screen, with or without a search; at 1280 px it is
//! open; a search the page refuses opens it at any width, to be corrected.

use duraq_core::EnqueueOptions;
use duraq_web::WebOptions;
use serde_json::{json, Value};

use crate::dash::{open, Dash};
use crate::support::{self, Page};

/// Whether the filters are open, how many the summary counts as set, whether
/// the queue field can be seen, and where the first job row sits against the
/// viewport's height.
const LOOK: &str = r#"
const panel = document.querySelector("details[data-filters-panel]");
const set = document.querySelector("details[data-filters-panel] summary [data-filters-set]");
const queue = document.querySelector("form[data-filters] input[name=queue]");
const row = document.querySelector("table[data-table=jobs] tr[data-job-id]");
return {
  open: panel ? panel.open : null,
  set: set ? Number(set.getAttribute("data-filters-set")) : 0,
  // A folded form's fields keep their layout boxes: ask whether they render.
  queueShown: !!queue && queue.checkVisibility(),
  rowBottom: row ? row.getBoundingClientRect().bottom : null,
  viewport: window.innerHeight,
};
"#;

async fn look(page: &Page) -> Value {
    page.js(LOOK, vec![]).await
}

/// The first job row's bottom edge is inside the first screen.
fn first_row_on_first_screen(v: &Value, what: &str) {
    let bottom = v["rowBottom"]
        .as_f64()
        .unwrap_or_else(|| panic!("{what}: no job row: {v}"));
    let height = v["viewport"].as_f64().expect("viewport height");
    assert!(
        bottom <= height,
        "{what}: the first job ends at {bottom} px, below the first screen ({height} px): {v}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_filters_fold_on_a_phone_so_the_first_job_shows_first() {
    let dash = Dash::start(WebOptions::new()).await;
    for n in 0..3 {
        dash.enqueue("send_receipt", json!({ "n": n }), EnqueueOptions::new())
            .await;
    }
    dash.failed("charge_card", json!({}), "billing", "declined")
        .await;

    support::run("filters", move |page| async move {
        page.set_width(390).await;
        open(&page, &dash.url("/jobs"), "jobs").await;
        let v = look(&page).await;
        first_row_on_first_screen(&v, "390 px, no search");
        assert_eq!(v["open"], json!(false), "folded on a phone: {v}");
        assert_eq!(v["set"], json!(0), "{v}");
        assert_eq!(v["queueShown"], json!(false), "{v}");
        page.screenshot("filters-390-folded").await;

        let search = "/jobs?status=failed&queue=billing";
        open(&page, &dash.url(search), "jobs").await;
        let v = look(&page).await;
        assert_eq!(v["open"], json!(false), "a search stays folded: {v}");
        assert_eq!(v["set"], json!(2), "status and queue: {v}");
        first_row_on_first_screen(&v, "390 px, a search");

        page.click("details[data-filters-panel] summary").await;
        let v = look(&page).await;
        assert_eq!(v["open"], json!(true), "the summary opens it: {v}");
        assert_eq!(v["queueShown"], json!(true), "{v}");

        open(&page, &dash.url("/jobs?args=%7Bnope"), "jobs").await;
        let v = look(&page).await;
        assert_eq!(v["open"], json!(true), "a refused search is open: {v}");
        assert_eq!(page.count("[data-error=\"invalid-args\"]").await, 1);

        page.set_width(1280).await;
        open(&page, &dash.url("/jobs"), "jobs").await;
        let v = look(&page).await;
        assert_eq!(v["open"], json!(true), "open on a desktop: {v}");
        assert_eq!(v["queueShown"], json!(true), "{v}");
        first_row_on_first_screen(&v, "1280 px");
    })
    .await;
}
