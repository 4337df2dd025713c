//! The page frame every page shares, and the embedded assets.
//!
//! Every page is `<main data-page="NAME">` inside one layout with the same nav
//! (`a[data-nav=…]`) and id search box (`form[data-search]`): the browser tests
//! and people alike find things in the same place on every page. Pages are maud
//! templates, so every interpolated value is HTML-escaped by construction; the
//! only `PreEscaped` text is the fixed markup of this crate. The CSS and JS are
//! compiled into the binary (`include_str!`) and served from `/assets/`, so the
//! dashboard works offline and under a strict Content-Security-Policy (no inline
//! script or style).

use axum::http::header;
use axum::response::{Html, IntoResponse, Response};
use maud::{html, Markup, DOCTYPE};

use crate::format::{relative, utc};
use crate::AppState;

const CSS: &str = include_str!("../assets/app.css");
const JS: &str = include_str!("../assets/app.js");
const BULK_JS: &str = include_str!("../assets/bulk.js");
const VIEWS_JS: &str = include_str!("../assets/views.js");

/// The nav entries: (`data-nav`, path, label).
const NAV: [(&str, &str, &str); 8] = [
    ("overview", "/", "Overview"),
    ("queues", "/queues", "Queues"),
    ("jobs", "/jobs", "Jobs"),
    ("retries", "/retries", "Retries"),
    ("scheduled", "/scheduled", "Scheduled"),
    ("workflows", "/workflows", "Workflows"),
    ("workers", "/workers", "Workers"),
    ("keys", "/keys", "Schedule keys"),
];

/// A path inside the dashboard, prefixed with its mount path.
pub fn link(state: &AppState, path: &str) -> String {
    match (state.options.base(), path) {
        ("", path) => path.to_string(),
        (base, "/") => base.to_string(),
        (base, path) => format!("{base}{path}"),
    }
}

/// The whole document for page `name` (one of `overview`, `queues`, `jobs`,
/// `job`, `bulk`, `retries`, `scheduled`, `workers`, `keys`). The pages
/// with selection boxes (jobs, retries, scheduled) also load `assets/bulk.js`,
/// the retries and scheduled views `assets/views.js` (their live refresh).
pub fn page(state: &AppState, name: &'static str, title: &str, body: Markup) -> Response {
    let current = match name {
        "job" | "bulk" => "jobs",
        "workflow" => "workflows",
        other => other,
    };
    let doc = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="referrer" content="same-origin";
                title { (title) " · duraq" }
                link rel="stylesheet" href=(link(state, "/assets/app.css"));
                script src=(link(state, "/assets/app.js")) defer {}
                @if matches!(name, "jobs" | "retries" | "scheduled") {
                    script src=(link(state, "/assets/bulk.js")) defer {}
                }
                @if matches!(name, "retries" | "scheduled") {
                    script src=(link(state, "/assets/views.js")) defer {}
                }
            }
            body data-base=(state.options.base()) {
                header {
                    span.brand { "duraq" }
                    nav {
                        @for (key, path, label) in NAV {
                            a data-nav=(key) href=(link(state, path))
                                aria-current=[(key == current).then_some("page")] { (label) }
                        }
                    }
                    form data-search method="get" action=(link(state, "/jobs/search")) {
                        input name="id" type="search" placeholder="Job id" aria-label="Job id" required;
                        button type="submit" { "Find" }
                    }
                    @if state.options.is_read_only() {
                        span.badge title="Actions are disabled" { "read-only" }
                    }
                }
                main data-page=(name) {
                    (body)
                }
            }
        }
    };
    Html(doc.into_string()).into_response()
}

/// A time as `<time>`: UTC text, relative time beside it, RFC-like in `title`.
pub fn time(ms: Option<i64>, now_ms: i64) -> Markup {
    match ms {
        None => html! { span.muted { "—" } },
        Some(ms) => html! {
            time data-ms=(ms) { (utc(ms)) } " " span.muted { "(" (relative(ms, now_ms)) ")" }
        },
    }
}

/// A hidden CSRF field for a POST form.
pub fn csrf_field(state: &AppState) -> Markup {
    html! { input type="hidden" name="csrf" value=(state.csrf); }
}

/// A short notice box (`kind`: `error` or `info`).
pub fn notice(kind: &'static str, text: &str) -> Markup {
    html! { p.notice.(kind) role="status" { (crate::format::visible(text)) } }
}

/// `GET /assets/app.css`.
pub async fn css() -> Response {
    asset("text/css; charset=utf-8", CSS)
}

/// `GET /assets/app.js`.
pub async fn js() -> Response {
    asset("text/javascript; charset=utf-8", JS)
}

/// `GET /assets/bulk.js`.
pub async fn bulk_js() -> Response {
    asset("text/javascript; charset=utf-8", BULK_JS)
}

/// `GET /assets/views.js`.
pub async fn views_js() -> Response {
    asset("text/javascript; charset=utf-8", VIEWS_JS)
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        body,
    )
        .into_response()
}
