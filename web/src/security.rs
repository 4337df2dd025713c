//! The guard in front of every route: `Host`, token, CSRF, read-only, response
//! headers.
//!
//! - Without a token, only a loopback or allowed `Host` is served
//!   ([`crate::host`]: the DNS-rebinding guard); any other is 421.
//! - With a token, every request must carry it: `Authorization: Bearer <token>`
//!   (scrapers, scripts) or the `duraq_token` cookie that a one-time
//!   `?token=<token>` visit sets (HttpOnly, SameSite=Strict) before redirecting
//!   to the same URL without the token, so it stays out of history and logs.
//!   That URL is always a path of the dashboard: a path that a browser would
//!   read as another host (`//evil.example/x`, `/\\evil.example`) becomes `/`.
//!   Comparisons are constant-time (`subtle`).
//! - State changes are POST only. A POST is refused (403) when the router is
//!   read-only, when `Origin` (else `Referer`) names another host than `Host`,
//!   or when its form lacks this router's random CSRF token ([`check_csrf`],
//!   called by each action handler on its parsed form).
//! - Every answer forbids framing and sniffing and allows only this origin's
//!   own scripts and styles (the pages have no inline script).

use axum::extract::{Request, State as AxumState};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use subtle::ConstantTimeEq;

use crate::State;

const COOKIE: &str = "duraq_token";
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
                   img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; \
                   form-action 'self'; base-uri 'none'";

/// 32 random bytes as hex, from the operating system.
pub fn random_token() -> String {
    let mut bytes = [0u8; 32];
    if getrandom::getrandom(&mut bytes).is_err() {
        // Never expected on a supported OS; std's hasher keys are random too.
        use std::hash::{BuildHasher, Hasher};
        for chunk in bytes.chunks_mut(8) {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u128(std::time::UNIX_EPOCH.elapsed().map_or(0, |d| d.as_nanos()));
            chunk.copy_from_slice(&h.finish().to_le_bytes());
        }
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Constant-time equality (lengths may differ: then false).
pub fn same_secret(given: &str, expected: &str) -> bool {
    bool::from(given.as_bytes().ct_eq(expected.as_bytes()))
}

/// The middleware. See the module doc.
pub async fn guard(AxumState(state): AxumState<State>, request: Request, next: Next) -> Response {
    // API paths: JSON refusals, no `?token=` login, bearer-only writes.
    let api = crate::api::is_api(request.uri().path());
    let refuse = |status, code, why| match api {
        true => crate::api::refusal(status, code, why),
        false => denied(status, why),
    };
    if state.options.token.is_none()
        && !crate::host::allowed(
            request.headers(),
            request.uri(),
            &state.options.allowed_hosts,
        )
    {
        return refuse(
            StatusCode::MISDIRECTED_REQUEST,
            "host-not-allowed",
            "this dashboard answers only to loopback names and --allowed-host names",
        );
    }
    if let Some(token) = &state.options.token {
        let why = "a token is required";
        let unauthorized = || refuse(StatusCode::UNAUTHORIZED, "unauthorized", why);
        match authenticate(request.headers(), request.uri(), token) {
            Auth::Ok => {}
            Auth::Login if !api => return login_redirect(&state, &request, token),
            Auth::Login | Auth::Denied => return unauthorized(),
        }
        if api && request.method() == Method::POST && !bearer(request.headers(), token) {
            return unauthorized();
        }
    }
    if request.method() == Method::POST {
        if state.options.is_read_only() {
            return refuse(
                StatusCode::FORBIDDEN,
                "read-only",
                "this dashboard is read-only",
            );
        }
        if !same_origin(request.headers()) {
            return refuse(
                StatusCode::FORBIDDEN,
                "cross-origin",
                "cross-origin request refused",
            );
        }
    }
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

enum Auth {
    Ok,
    Login,
    Denied,
}

/// Whether `Authorization: Bearer` carries the token.
fn bearer(headers: &HeaderMap, token: &str) -> bool {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|b| same_secret(b.trim(), token))
}

fn authenticate(headers: &HeaderMap, uri: &axum::http::Uri, token: &str) -> Auth {
    if bearer(headers, token) {
        return Auth::Ok;
    }
    let cookie = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().strip_prefix(COOKIE)?.strip_prefix('='))
        .any(|value| same_secret(value, token));
    if cookie {
        return Auth::Ok;
    }
    if query_token(uri).is_some_and(|t| same_secret(&t, token)) {
        return Auth::Login;
    }
    Auth::Denied
}

/// The `token` query parameter, percent-decoded.
fn query_token(uri: &axum::http::Uri) -> Option<String> {
    let query = uri.query()?;
    serde_urlencoded::from_str::<Vec<(String, String)>>(query)
        .ok()?
        .into_iter()
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v)
}

/// Sets the cookie and sends the browser to the same URL without `token`.
fn login_redirect(state: &State, request: &Request, token: &str) -> Response {
    let uri = request.uri();
    let rest: Vec<(String, String)> = uri
        .query()
        .and_then(|q| serde_urlencoded::from_str::<Vec<(String, String)>>(q).ok())
        .unwrap_or_default()
        .into_iter()
        .filter(|(k, _)| k != "token")
        .collect();
    let path = crate::html::link(state, same_site_path(uri.path()));
    let target = match serde_urlencoded::to_string(&rest) {
        Ok(q) if !q.is_empty() => format!("{path}?{q}"),
        _ => path,
    };
    let cookie_path = match state.options.base() {
        "" => "/",
        base => base,
    };
    let cookie = format!("{COOKIE}={token}; Path={cookie_path}; HttpOnly; SameSite=Strict");
    let mut response = Redirect::to(&target).into_response();
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

/// `path`, or `/` when a browser would read it as another host: a second
/// leading `/` or a `\\` (which browsers treat as `/`) makes it
/// scheme-relative (`//evil.example/x`); a path not starting with `/` is not
/// one of ours either.
fn same_site_path(path: &str) -> &str {
    let second = path.as_bytes().get(1);
    if path.starts_with('/') && !matches!(second, Some(b'/' | b'\\')) {
        path
    } else {
        "/"
    }
}

/// `Origin` (else `Referer`), when present, must name the `Host` the request
/// was sent to.
fn same_origin(headers: &HeaderMap) -> bool {
    let Some(host) = headers.get(header::HOST).and_then(|v| v.to_str().ok()) else {
        return true;
    };
    let claimed = headers
        .get(header::ORIGIN)
        .or_else(|| headers.get(header::REFERER))
        .map(|v| v.to_str().unwrap_or("\u{0}"));
    match claimed {
        None => true,
        Some(url) => authority(url).is_some_and(|a| a.eq_ignore_ascii_case(host)),
    }
}

/// `host[:port]` of an absolute URL.
fn authority(url: &str) -> Option<&str> {
    let rest = url.split_once("://")?.1;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    Some(&rest[..end])
}

/// The form's CSRF token against this router's: `None` when it matches, else
/// the 403 to send.
pub fn check_csrf(state: &State, given: &str) -> Option<Response> {
    (!same_secret(given, &state.csrf)).then(|| {
        denied(
            StatusCode::FORBIDDEN,
            "missing or stale form token; reload the page",
        )
    })
}

fn denied(status: StatusCode, why: &'static str) -> Response {
    (
        status,
        [(header::CACHE_CONTROL, "no-store")],
        format!("{why}\n"),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_must_match_the_host() {
        let mut h = HeaderMap::new();
        h.insert(header::HOST, HeaderValue::from_static("127.0.0.1:8080"));
        assert!(same_origin(&h));
        h.insert(
            header::REFERER,
            HeaderValue::from_static("http://127.0.0.1:8080/jobs/x"),
        );
        assert!(same_origin(&h));
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://evil.example"),
        );
        assert!(!same_origin(&h));
        h.insert(header::ORIGIN, HeaderValue::from_static("null"));
        assert!(!same_origin(&h));
        assert_eq!(authority("https://a.b:1/x?y"), Some("a.b:1"));
    }

    #[test]
    fn login_redirects_stay_on_the_site() {
        for (path, kept) in [
            ("/jobs", "/jobs"),
            ("/", "/"),
            ("//evil.example/x", "/"),
            ("/\\evil.example", "/"),
            ("evil", "/"),
            ("", "/"),
        ] {
            assert_eq!(same_site_path(path), kept, "{path}");
        }
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("ab", "abc"));
        assert!(!same_secret("abd", "abc"));
        assert_eq!(random_token().len(), 64);
        assert_ne!(random_token(), random_token());
    }
}
