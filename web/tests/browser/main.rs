//! The dashboard in a real browser: headless Chromium (Debian's `chromium`)
//! driven through `chromedriver` by `fantoccini` (`docs/dashboard.md`).
//!
//! Each test seeds a fresh SQLite store in a temp dir through the library,
//! serves `duraq_web::router` in-process on 127.0.0.1:0 with `axum::serve`, and
//! starts its own chromedriver + Chromium (private port, fresh profile). Waits
//! poll the DOM with a deadline ([`support::DEADLINE`]); nothing sleeps in place
//! of a condition. Screenshots go to `<target>/web-screenshots/`.
//!
//! The tests are one binary, `browser`, split into modules by what they check
//! (a directory, not a file per module, so CI links one binary, not five):
//! - [`dash`]: the fixture, a seeded store served on a loopback port, and the
//!   steps every test takes on a page (open, press, a POST without CSRF);
//! - [`navigation`]: every page loads, the nav links, the jobs table's paging,
//!   filters and search by id;
//! - [`actions`]: retry, cancel, pause and resume reach the store;
//! - [`filters`]: the jobs page's search form folds on a phone, open on a
//!   desktop;
//! - [`live`]: the overview's counts follow another process's enqueues;
//! - [`safety`]: hostile text stays text, read-only refuses, the token logs in
//!   once and no secret is shown;
//! - [`views`]: the retries and scheduled views refresh live, search and run
//!   all their jobs now;
//! - [`layout`]: every page at 1280 and 390 px, without sideways scrolling or
//!   a table cell broken over lines.
//!
//! Without Chromium these tests skip with a message; under `CI=true` they fail
//! (`.ci/run` installs `chromium` and `chromium-driver`).
//!
//! Run: `cargo test -p duraq-web --test browser` (one module: add `safety::`).

#[path = "../support/mod.rs"]
mod support;

mod actions;
mod dash;
mod filters;
mod layout;
mod live;
mod navigation;
mod safety;
mod views;
