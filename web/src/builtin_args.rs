//! The args of duraq's built-in jobs as their handlers read them
//! (`duraq.sleep` takes `{"ms": N}`, `duraq.http` `{"url", "method"?,
//! "headers"?, "body"?}`), checked before any job exists: `duraq enqueue`,
//! workflow and schedule files and the HTTP API refuse args the handler
//! would refuse at once, as `invalid-args`, with the handler's own message.
//!
//! Why here: the `duraq` program runs the handlers and the HTTP API enqueues
//! for them, and this is the lowest crate both reach; the handlers read their
//! args with these same functions, so a check and a run cannot disagree.
//! Jobs whose args need another crate (`duraq.mail.deliver`) are checked by
//! an [`ArgsCheck`] the program gives ([`crate::WebOptions::args_check`]).

use axum::http::{HeaderMap, HeaderName, HeaderValue, Method};
use serde_json::Value;
use url::Url;

/// Job name of the handler that always succeeds.
pub const NOOP: &str = "duraq.noop";
/// Job name of the handler that sleeps `{"ms": N}` and succeeds.
pub const SLEEP: &str = "duraq.sleep";
/// Job name of the handler that completes with its args as its output.
pub const ECHO: &str = "duraq.echo";
/// Job name of the webhook handler.
pub const HTTP: &str = "duraq.http";

/// Job name of the handler that waits for a signal and completes with its
/// payload (`{"name", "timeoutMs"?}`).
pub const AWAIT_SIGNAL: &str = "duraq.await_signal";

/// How long `duraq.await_signal` waits when its args give no `timeoutMs`:
/// 30 days.
pub const DEFAULT_SIGNAL_TIMEOUT_MS: u64 = 30 * 24 * 3_600_000;

/// A check of job `name`'s args: `Err` is why the handler would refuse them.
pub type ArgsCheck = fn(name: &str, args: &Value) -> Result<(), String>;

/// Checks `args` the way the built-in job `name`'s handler reads them:
/// `duraq.noop` and `duraq.echo` take anything; other names are the
/// application's, not checked here.
///
/// ```
/// use duraq_web::builtin_args::check_args;
/// assert!(check_args("duraq.sleep", &serde_json::json!({"ms": 5})).is_ok());
/// assert!(check_args("duraq.sleep", &serde_json::json!({"ms": "fast"})).is_err());
/// ```
pub fn check_args(name: &str, args: &Value) -> Result<(), String> {
    match name {
        SLEEP => sleep_ms(args).map(drop),
        HTTP => http_request(args).map(drop),
        AWAIT_SIGNAL => awaited_signal(args).map(drop),
        _ => Ok(()),
    }
}

/// How long `duraq.sleep` sleeps, or why its args are not `{"ms": N}`.
pub fn sleep_ms(args: &Value) -> Result<u64, String> {
    args.get("ms")
        .and_then(Value::as_u64)
        .ok_or_else(|| format!("duraq.sleep expects {{\"ms\": N}} with N >= 0, got {args}"))
}

/// The signal `duraq.await_signal` waits for and how long (ms), or why its
/// args are not `{"name": "…", "timeoutMs"?: N}` (an unknown key is named).
///
/// ```
/// use duraq_web::builtin_args::awaited_signal;
/// let (name, ms) = awaited_signal(&serde_json::json!({"name": "go", "timeoutMs": 5})).unwrap();
/// assert_eq!((name.as_str(), ms), ("go", 5));
/// assert!(awaited_signal(&serde_json::json!({"name": "go", "timeout": 5})).is_err());
/// ```
pub fn awaited_signal(args: &Value) -> Result<(String, u64), String> {
    let expects = "duraq.await_signal expects {\"name\": \"…\", \"timeoutMs\"?: N}";
    let fields = args
        .as_object()
        .ok_or_else(|| format!("{expects}, got {args}"))?;
    if let Some(unknown) = fields
        .keys()
        .find(|k| !["name", "timeoutMs"].contains(&k.as_str()))
    {
        return Err(format!("{expects}: unknown key {unknown:?}"));
    }
    let name = fields.get("name").and_then(Value::as_str);
    let name = name
        .filter(|n| !n.is_empty())
        .ok_or_else(|| format!("{expects}, got {args}"))?;
    let timeout = match fields.get("timeoutMs") {
        None => DEFAULT_SIGNAL_TIMEOUT_MS,
        Some(ms) => ms
            .as_u64()
            .ok_or_else(|| format!("{expects}: timeoutMs must be N >= 0, got {ms}"))?,
    };
    Ok((name.to_owned(), timeout))
}

/// A `duraq.http` request as its args describe it, before it is sent.
#[derive(Debug)]
pub struct HttpRequest {
    /// The method (default `POST`).
    pub method: Method,
    /// An `http` or `https` URL.
    pub url: Url,
    /// The headers given.
    pub headers: HeaderMap,
    /// The URL without its password, for messages.
    pub shown: String,
}

/// Reads a `duraq.http` job's args; the error says why such a request can
/// never be sent, and never shows a password of the URL.
pub fn http_request(args: &Value) -> Result<HttpRequest, String> {
    let raw_url = args
        .get("url")
        .and_then(Value::as_str)
        .ok_or_else(|| "duraq.http expects {\"url\": …}".to_string())?;
    let url =
        Url::parse(raw_url).map_err(|e| format!("duraq.http: invalid url {raw_url:?}: {e}"))?;
    let shown = redacted(&url);
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "duraq.http: {shown} is not an http:// or https:// URL"
        ));
    }
    let method = args.get("method").and_then(Value::as_str).unwrap_or("POST");
    let method = Method::from_bytes(method.to_ascii_uppercase().as_bytes())
        .map_err(|_| format!("duraq.http: invalid method {method:?}"))?;
    let mut headers = HeaderMap::new();
    if let Some(given) = args.get("headers") {
        let map = given
            .as_object()
            .ok_or_else(|| "duraq.http: \"headers\" must be an object".to_string())?;
        for (name, value) in map {
            let value = value
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| value.to_string());
            let header = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("duraq.http: invalid header name {name:?}"))?;
            let value = HeaderValue::from_str(&value)
                .map_err(|_| format!("duraq.http: invalid value for header {name:?}"))?;
            headers.append(header, value);
        }
    }
    Ok(HttpRequest {
        method,
        url,
        headers,
        shown,
    })
}

/// `url` without its password, safe to store in `lastError`.
pub fn redacted(url: &Url) -> String {
    let mut shown = url.clone();
    if shown.password().is_some() {
        let _ = shown.set_password(Some("***"));
    }
    shown.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_builtin_reads_its_args() {
        assert_eq!(sleep_ms(&json!({"ms": 5})), Ok(5));
        assert!(check_args(SLEEP, &json!([])).is_err());
        assert!(check_args(HTTP, &json!({"url": "ftp://x"})).is_err());
        assert!(check_args(HTTP, &json!({"url": "http://x", "headers": []})).is_err());
        let r = http_request(&json!({"url": "https://u:pw@x/", "method": "put"})).unwrap();
        assert_eq!((r.method, r.shown.contains("pw")), (Method::PUT, false));
        assert!(check_args(NOOP, &json!("anything")).is_ok());
        assert!(check_args("app.job", &json!(null)).is_ok());
    }
}
