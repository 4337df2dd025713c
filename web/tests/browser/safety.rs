//! What the dashboard must never do: turn stored text into markup, act when
//! read-only, or show its token or a configured secret. Job names, args, keys
//! and errors come from producers the dashboard does not trust, and the token
//! guards every action, so these are checked in the browser, where a slip
//! would run.

use duraq_core::{EnqueueOptions, JobStatus};
use duraq_web::WebOptions;
use serde_json::json;

use crate::dash::{open, post_without_csrf, press, Dash};
use crate::support;

/// Percent-encodes a query value (every byte but unreserved ones).
fn q(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Markup that would run or load something if a page ever failed to escape it.
const HOSTILE: &str = "<script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\">\"'><svg onload=window.__pwned=3>";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_names_args_keys_and_errors_render_as_text() {
    let dash = Dash::start(WebOptions::new()).await;
    let args = json!({"html": HOSTILE, "list": [HOSTILE]});
    let plain = dash
        .enqueue(
            HOSTILE,
            args.clone(),
            EnqueueOptions::new()
                .queue(HOSTILE)
                .idempotency_key(HOSTILE),
        )
        .await;
    let failed = dash
        .failed(&format!("{HOSTILE}!"), args.clone(), HOSTILE, HOSTILE)
        .await;
    let keyed = dash.scheduled(HOSTILE, HOSTILE, args).await;

    support::run("hostile_content", move |page| async move {
        let visits = [
            (dash.url("/"), "overview"),
            (dash.url("/queues"), "queues"),
            (dash.url("/jobs"), "jobs"),
            (dash.url(&format!("/jobs?name={}", q(HOSTILE))), "jobs"),
            (dash.url(&format!("/jobs?queue={}", q(HOSTILE))), "jobs"),
            (dash.url(&format!("/jobs/{plain}")), "job"),
            (dash.url(&format!("/jobs/{failed}")), "job"),
            (dash.url(&format!("/jobs/{keyed}")), "job"),
            (dash.url("/workers"), "workers"),
            (dash.url(&format!("/keys?key={}", q(HOSTILE))), "keys"),
        ];
        for (url, name) in visits {
            open(&page, &url, name).await;
            let injected = page
                .js(
                    "return { pwned: typeof window.__pwned, \
                       scripts: Array.from(document.scripts).filter(s => s.textContent.includes('__pwned')).length, \
                       imgs: document.querySelectorAll('img[src=\"x\"]').length, \
                       svgs: Array.from(document.querySelectorAll('svg')).filter(s => s.hasAttribute('onload')).length, \
                       handlers: Array.from(document.querySelectorAll('*')).filter(e => Array.from(e.attributes).some(a => a.name.startsWith('on'))).length };",
                    vec![],
                )
                .await;
            assert_eq!(
                injected,
                json!({"pwned": "undefined", "scripts": 0, "imgs": 0, "svgs": 0, "handlers": 0}),
                "hostile text became markup on {url}"
            );
        }
        // The detail page shows the text itself, escaped, not dropped.
        open(&page, &dash.url(&format!("/jobs/{failed}")), "job").await;
        let text = page.text("main").await.unwrap_or_default();
        assert!(
            text.contains("<script>window.__pwned=1</script>"),
            "the failed job's page shows the hostile text literally"
        );
        page.screenshot("job-hostile").await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_dashboard_shows_no_actions_and_refuses_posts() {
    let dash = Dash::start(WebOptions::new().read_only(true)).await;
    let failed = dash
        .failed("charge_card", json!({}), "billing", "declined")
        .await;
    let queued = dash
        .enqueue("send_welcome", json!({}), EnqueueOptions::new())
        .await;
    let keyed = dash.scheduled("digest:1", "send_digest", json!({})).await;

    support::run("read_only", move |page| async move {
        for (path, name) in [
            ("/".to_string(), "overview"),
            ("/queues".to_string(), "queues"),
            ("/jobs".to_string(), "jobs"),
            (format!("/jobs/{failed}"), "job"),
            (format!("/jobs/{queued}"), "job"),
            (format!("/jobs/{keyed}"), "job"),
            ("/workers".to_string(), "workers"),
            ("/keys?key=digest%3A1".to_string(), "keys"),
        ] {
            open(&page, &dash.url(&path), name).await;
            assert_eq!(
                page.count("form[data-action]").await,
                0,
                "read-only {path} has an action form"
            );
        }
        open(&page, &dash.url(&format!("/jobs/{failed}")), "job").await;
        page.screenshot("job-read-only").await;
        // Even a hand-made POST changes nothing.
        for (id, action) in [(&failed, "retry"), (&queued, "cancel")] {
            let answer = post_without_csrf(&page, &format!("/jobs/{id}/{action}")).await;
            assert_eq!(answer, 403, "read-only POST {action} answered {answer}");
        }
        assert_eq!(dash.status(&failed).await, JobStatus::Failed);
        assert_eq!(dash.status(&queued).await, JobStatus::Queued);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_dashboard_logs_in_once_and_never_shows_a_secret() {
    const TOKEN: &str = "tok-3f9c2a7d5e1b";
    const PASSWORD: &str = "db-password-hunter2";
    let dash = Dash::start(WebOptions::new().token(TOKEN).secrets([PASSWORD])).await;
    let failed = dash
        .failed(
            "charge_card",
            json!({}),
            "billing",
            &format!("connect postgres://app:{PASSWORD}@db/app failed; token {TOKEN}"),
        )
        .await;

    support::run("token", move |page| async move {
        // Without the token: refused, no page.
        page.goto(&dash.url("/")).await;
        page.wait_for("the refusal", |p| async move {
            match p.text("body").await {
                Some(t) if t.contains("token") => Ok(()),
                other => Err(format!("{other:?}")),
            }
        })
        .await;
        assert_eq!(
            page.count("main[data-page]").await,
            0,
            "no page without the token"
        );

        // `?token=` once: a cookie, and the URL loses the token.
        page.goto(&dash.url(&format!("/jobs?status=failed&token={TOKEN}")))
            .await;
        page.wait_page("jobs").await;
        let url = page.url().await;
        assert!(
            !url.contains(TOKEN),
            "the token stays out of the URL: {url}"
        );
        assert!(
            url.contains("status=failed"),
            "the rest of the query is kept: {url}"
        );
        let cookies = page.js("return document.cookie;", vec![]).await;
        assert!(
            !cookies.as_str().unwrap_or("").contains(TOKEN),
            "the token cookie is HttpOnly"
        );

        // The cookie carries every later request: nav, detail, the live
        // counts' event stream and a POST.
        page.mark_document().await;
        page.click("a[data-nav=\"overview\"]").await;
        page.wait_navigated().await;
        page.wait_page("overview").await;
        let source = page.client.source().await.expect("page source");
        assert!(!source.contains(TOKEN), "the overview renders the token");
        page.mark_document().await;
        dash.enqueue("send_welcome", json!({}), EnqueueOptions::new())
            .await;
        page.wait_text("[data-count=\"queued\"]", "to read 1 (live)", |t| t == "1")
            .await;
        assert!(page.still_marked().await, "live, without a reload");

        open(&page, &dash.url(&format!("/jobs/{failed}")), "job").await;
        let source = page.client.source().await.expect("page source");
        assert!(!source.contains(TOKEN), "the job page renders the token");
        assert!(!source.contains(PASSWORD), "the job page renders a secret");
        let error = page
            .text("[data-field=\"lastError\"]")
            .await
            .unwrap_or_default();
        assert!(
            error.contains("***"),
            "secrets are masked in lastError: {error}"
        );
        page.screenshot("job-secrets-masked").await;
        press(&page, "retry").await;
        page.wait_text("[data-field=\"status\"]", "to read queued", |t| {
            t == "queued"
        })
        .await;
        assert_eq!(dash.status(&failed).await, JobStatus::Queued);
    })
    .await;
}
