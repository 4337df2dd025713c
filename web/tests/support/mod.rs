//! Browser-test support: a headless Chromium driven through `chromedriver`
//! (WebDriver) by `fantoccini`, DOM polling with deadlines, screenshots.
//!
//! Each test owns one `chromedriver` (private port, own process group) and one
//! Chromium session (fresh `--user-data-dir`). [`run`] closes the session and
//! kills the process group even when the test body panics.
//!
//! Without Chromium the tests skip with a message, except under `CI=true`,
//! where they fail: CI installs `chromium` and `chromium-driver` (`.ci/run`).

#![allow(dead_code)]

use std::future::Future;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::error::NewSessionError;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};

/// How long any one wait for the page may take before the test fails.
pub const DEADLINE: Duration = Duration::from_secs(10);

/// The browser window's size (width, height).
const WINDOW: (u32, u32) = (1280, 900);

/// How often a wait looks at the DOM again.
const POLL: Duration = Duration::from_millis(50);

/// Chromium as Debian installs it; `DURAQ_TEST_CHROMIUM` overrides.
fn chromium_path() -> PathBuf {
    std::env::var_os("DURAQ_TEST_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"))
}

/// ChromeDriver as Debian installs it; `DURAQ_TEST_CHROMEDRIVER` overrides.
fn chromedriver_path() -> PathBuf {
    std::env::var_os("DURAQ_TEST_CHROMEDRIVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromedriver"))
}

/// Whether this is CI (`CI=true`), where nothing may skip.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// Whether the browser is there. `false` means: skip (the message is printed);
/// under `CI=true` a missing browser panics instead.
pub fn browser_available(test: &str) -> bool {
    let missing: Vec<String> = [chromium_path(), chromedriver_path()]
        .into_iter()
        .filter(|p| !p.exists())
        .map(|p| p.display().to_string())
        .collect();
    if missing.is_empty() {
        return true;
    }
    let msg = format!(
        "{test}: {} not found; install Debian's `chromium` and `chromium-driver` \
         (or set DURAQ_TEST_CHROMIUM / DURAQ_TEST_CHROMEDRIVER)",
        missing.join(" and ")
    );
    if in_ci() {
        panic!("{msg} (CI=true: browser tests must run, not skip)");
    }
    skip(&msg);
    false
}

/// Says on the real stderr (not the captured one) that a test skipped.
pub fn skip(msg: &str) {
    note(&format!("SKIPPED {msg}"));
}

/// A line on the real stderr, shown even when the test passes: what a test
/// could not check.
pub fn note(msg: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{msg}");
}

/// The cargo target directory the test binary runs from
/// (`<target>/<profile>/deps/browser-…` → `<target>`).
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    exe.parent() // deps
        .and_then(Path::parent) // <profile>
        .and_then(Path::parent) // <target>
        .map(Path::to_path_buf)
        .expect("test executable lives in <target>/<profile>/deps")
}

/// The profile directory (`<target>/<profile>`), where cargo puts binaries.
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    exe.parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .expect("test executable lives in <target>/<profile>/deps")
}

/// Where screenshots go: `<target>/web-screenshots/`.
pub fn screenshot_dir() -> PathBuf {
    let dir = target_dir().join("web-screenshots");
    std::fs::create_dir_all(&dir).expect("create web-screenshots dir");
    dir
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("bind 127.0.0.1:0")
}

/// One `chromedriver` process, in its own process group so that the Chromium it
/// starts goes with it.
struct Driver {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Driver {
    fn spawn(dir: &Path) -> Driver {
        use std::os::unix::process::CommandExt;
        let port = free_port();
        let log = dir.join("chromedriver.log");
        let child = Command::new(chromedriver_path())
            .arg(format!("--port={port}"))
            .arg(format!("--log-path={}", log.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", chromedriver_path().display()));
        Driver { child, port, log }
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        // The whole group: chromedriver and any Chromium it left behind.
        let pgid = self.child.id();
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{pgid}")])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A started browser: the WebDriver client plus what keeps it alive.
pub struct Browser {
    pub client: Client,
    driver: Driver,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts chromedriver on a private port and one headless Chromium session
    /// with a fresh profile.
    pub async fn start() -> Browser {
        let profile = tempfile::tempdir().expect("profile tempdir");
        let user_data = profile.path().join("chromium-profile");
        let mut caps = serde_json::Map::new();
        caps.insert("browserName".into(), json!("chrome"));
        caps.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": chromium_path(),
                "args": [
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-quic",
                    "--no-first-run",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    "--disable-dev-shm-usage",
                    format!("--window-size={},{}", WINDOW.0, WINDOW.1),
                    format!("--user-data-dir={}", user_data.display()),
                ],
            }),
        );
        // Alerts (a confirm() on a destructive button) are accepted, not fatal.
        caps.insert("unhandledPromptBehavior".into(), json!("accept"));
        // A port picked free can be taken before chromedriver binds it: then it
        // exits, and another port is tried.
        let mut last = String::new();
        for _ in 0..3 {
            let mut driver = Driver::spawn(profile.path());
            let url = format!("http://127.0.0.1:{}", driver.port);
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                if let Ok(Some(status)) = driver.child.try_wait() {
                    last = format!(
                        "chromedriver on {url} exited ({status})\n{}",
                        driver.log_tail()
                    );
                    break;
                }
                let connector = hyper_util::client::legacy::connect::HttpConnector::new();
                match ClientBuilder::new(connector)
                    .capabilities(caps.clone())
                    .connect(&url)
                    .await
                {
                    Ok(client) => {
                        return Browser {
                            client,
                            driver,
                            _profile: profile,
                        }
                    }
                    // Not listening yet: poll its port until the deadline.
                    Err(
                        NewSessionError::Failed(_)
                        | NewSessionError::FailedC(_)
                        | NewSessionError::Lost(_),
                    ) if Instant::now() < deadline => tokio::time::sleep(POLL).await,
                    Err(e) => panic!(
                        "no WebDriver session from chromedriver at {url}: {e}\n\
                         --- chromedriver log ---\n{}",
                        driver.log_tail()
                    ),
                }
            }
        }
        panic!("chromedriver did not start: {last}");
    }

    /// Ends the session (Chromium quits); the driver goes when `self` drops.
    pub async fn close(self) {
        let _ = tokio::time::timeout(Duration::from_secs(5), self.client.clone().close()).await;
    }
}

/// Runs `body` with a fresh browser, then closes it, even when `body` panics.
/// Returns without running `body` when the browser is missing outside CI.
pub async fn run<F, Fut>(test: &str, body: F)
where
    F: FnOnce(Page) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    if !browser_available(test) {
        return;
    }
    let started = Instant::now();
    let browser = Browser::start().await;
    eprintln!("{test}: browser up in {:?}", started.elapsed());
    let page = Page {
        client: browser.client.clone(),
        test: test.to_string(),
    };
    let outcome = tokio::spawn(body(page)).await;
    browser.close().await;
    eprintln!("{test}: done in {:?}", started.elapsed());
    if let Err(e) = outcome {
        if e.is_panic() {
            std::panic::resume_unwind(e.into_panic());
        }
        panic!("{test}: test task failed: {e}");
    }
}

/// The test's view of the browser: navigation, DOM queries, waits, screenshots.
#[derive(Clone)]
pub struct Page {
    pub client: Client,
    test: String,
}

impl Page {
    pub async fn goto(&self, url: &str) {
        self.client
            .goto(url)
            .await
            .unwrap_or_else(|e| panic!("goto {url}: {e}"));
    }

    pub async fn url(&self) -> String {
        self.client
            .current_url()
            .await
            .expect("current_url")
            .to_string()
    }

    /// The path of the current URL (no query).
    pub async fn path(&self) -> String {
        self.client
            .current_url()
            .await
            .expect("current_url")
            .path()
            .to_string()
    }

    /// Runs `script` (a function body; `arguments[i]` are `args`) in the page.
    pub async fn js(&self, script: &str, args: Vec<Value>) -> Value {
        self.client
            .execute(script, args)
            .await
            .unwrap_or_else(|e| panic!("execute {script:?}: {e}"))
    }

    /// Elements matching `css`, now.
    pub async fn count(&self, css: &str) -> usize {
        self.js(
            "return document.querySelectorAll(arguments[0]).length;",
            vec![json!(css)],
        )
        .await
        .as_u64()
        .expect("count is a number") as usize
    }

    /// The text of the first element matching `css`, or `None`.
    pub async fn text(&self, css: &str) -> Option<String> {
        let v = self
            .js(
                "const e = document.querySelector(arguments[0]); \
                 return e === null ? null : e.textContent;",
                vec![json!(css)],
            )
            .await;
        v.as_str().map(|s| s.trim().to_string())
    }

    /// An attribute of the first element matching `css`, or `None`.
    pub async fn attr(&self, css: &str, name: &str) -> Option<String> {
        let v = self
            .js(
                "const e = document.querySelector(arguments[0]); \
                 return e === null ? null : e.getAttribute(arguments[1]);",
                vec![json!(css), json!(name)],
            )
            .await;
        v.as_str().map(str::to_string)
    }

    /// Every value of attribute `name` over the elements matching `css`, in order.
    pub async fn attrs(&self, css: &str, name: &str) -> Vec<String> {
        let v = self
            .js(
                "return Array.from(document.querySelectorAll(arguments[0]))\
                 .map(e => e.getAttribute(arguments[1]));",
                vec![json!(css), json!(name)],
            )
            .await;
        v.as_array()
            .expect("array")
            .iter()
            .filter_map(|x| x.as_str().map(str::to_string))
            .collect()
    }

    /// Polls `probe` until it returns `Some`, or fails after [`DEADLINE`] with
    /// `what` and the last value seen.
    pub async fn wait_for<T, P, PF>(&self, what: &str, mut probe: P) -> T
    where
        P: FnMut(Page) -> PF,
        PF: Future<Output = Result<T, String>>,
    {
        let deadline = Instant::now() + DEADLINE;
        loop {
            match probe(self.clone()).await {
                Ok(v) => return v,
                Err(last) if Instant::now() >= deadline => {
                    let url = self.url().await;
                    self.screenshot(&format!("FAILED-{}", self.test)).await;
                    panic!("{}: timed out after {DEADLINE:?} waiting for {what} on {url}; last seen: {last}", self.test);
                }
                Err(_) => tokio::time::sleep(POLL).await,
            }
        }
    }

    /// Waits until `css` matches at least one element.
    pub async fn wait_present(&self, css: &str) {
        let css_owned = css.to_string();
        self.wait_for(&format!("`{css}` to be present"), move |p| {
            let css = css_owned.clone();
            async move {
                match p.count(&css).await {
                    0 => Err("absent".to_string()),
                    _ => Ok(()),
                }
            }
        })
        .await
    }

    /// Waits until the text of `css` satisfies `pred`; returns that text.
    pub async fn wait_text(&self, css: &str, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let t = self.text(css).await;
            if let Some(t) = &t {
                if pred(t) {
                    return t.clone();
                }
            }
            if Instant::now() >= deadline {
                let url = self.url().await;
                self.screenshot(&format!("FAILED-{}", self.test)).await;
                panic!(
                    "{}: timed out after {DEADLINE:?} waiting for `{css}` {what} on {url}; last seen: {t:?}",
                    self.test
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Waits for a page whose `<main>` says `data-page="name"`.
    pub async fn wait_page(&self, name: &str) {
        self.wait_present(&format!("main[data-page=\"{name}\"]"))
            .await
    }

    /// Clicks the first element matching `css` (it must be there now).
    pub async fn click(&self, css: &str) {
        let el = self
            .client
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("{}: find `{css}`: {e}", self.test));
        el.click()
            .await
            .unwrap_or_else(|e| panic!("{}: click `{css}`: {e}", self.test));
    }

    /// Types `text` into the input matching `css` (cleared first).
    pub async fn type_into(&self, css: &str, text: &str) {
        let el = self
            .client
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("{}: find `{css}`: {e}", self.test));
        el.clear().await.expect("clear input");
        el.send_keys(text).await.expect("send_keys");
    }

    /// Marks the current document so that [`Page::wait_navigated`] can tell a
    /// new one from it.
    pub async fn mark_document(&self) {
        self.js("window.__duraqTestMark = true; return null;", vec![])
            .await;
    }

    /// Whether the marked document is still the one shown.
    pub async fn still_marked(&self) -> bool {
        self.js("return window.__duraqTestMark === true;", vec![])
            .await
            .as_bool()
            .unwrap_or(false)
    }

    /// Waits until a new document (not the marked one) has loaded.
    pub async fn wait_navigated(&self) {
        self.wait_for("a new page to load", |p| async move {
            let v = p
                .js(
                    "return window.__duraqTestMark !== true && document.readyState === 'complete';",
                    vec![],
                )
                .await;
            if v.as_bool() == Some(true) {
                Ok(())
            } else {
                Err("still the old document or loading".into())
            }
        })
        .await
    }

    /// Resizes the window to `width` px (the default height); the page's
    /// layout answers as on a screen that wide.
    pub async fn set_width(&self, width: u32) {
        self.client
            .set_window_size(width, WINDOW.1)
            .await
            .unwrap_or_else(|e| panic!("{}: resize to {width} px: {e}", self.test));
    }

    /// Saves a PNG of the whole page as `<target>/web-screenshots/<name>.png`
    /// (the window grows to the page's height for the shot, up to 4000 px,
    /// at its current width).
    pub async fn screenshot(&self, name: &str) -> PathBuf {
        let width = self
            .client
            .get_window_rect()
            .await
            .map_or(WINDOW.0, |(_, _, w, _)| w as u32);
        // The window is taller than the viewport by the (headless) browser frame.
        let height = self
            .js(
                "return document.documentElement.scrollHeight \
                     + Math.max(0, window.outerHeight - window.innerHeight);",
                vec![],
            )
            .await
            .as_u64()
            .unwrap_or(900)
            .clamp(WINDOW.1 as u64, 4000) as u32;
        let grown = height > WINDOW.1 && self.client.set_window_size(width, height).await.is_ok();
        let shot = self.client.screenshot().await;
        if grown {
            let _ = self.client.set_window_size(width, WINDOW.1).await;
        }
        let png = match shot {
            Ok(png) => png,
            Err(e) => {
                eprintln!("{}: screenshot {name} failed: {e}", self.test);
                return PathBuf::new();
            }
        };
        let path = screenshot_dir().join(format!("{name}.png"));
        std::fs::write(&path, png).expect("write screenshot");
        path
    }
}
