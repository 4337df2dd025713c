//! The `Host` allow-list of a dashboard without a token: the DNS-rebinding guard.
//!
//! A web page on `evil.example` can make its own name resolve to 127.0.0.1 and
//! then talk to a loopback dashboard as a same-origin page: the browser sends
//! `Host: evil.example:8080` and `Origin: http://evil.example:8080`, which agree,
//! so the CSRF check alone lets it read every page and run every action. What
//! the page cannot forge is the `Host` header, so a dashboard without a token
//! answers only requests whose `Host` is a loopback name or address, or a name
//! the operator allowed ([`crate::WebOptions::allowed_hosts`]); any other gets
//! 421 Misdirected Request. With a token the browser of a rebinding page has no
//! cookie for its name, so the token is the guard there.

use std::net::IpAddr;

use axum::http::{header, HeaderMap, Uri};

/// Whether the request's `Host` (and the authority of an absolute-form target)
/// is allowed: a loopback name or address, or one of `allowed` (case-insensitive,
/// any port). A request without `Host` (HTTP/1.0) names no site a browser could
/// be tricked into, so it passes.
pub fn allowed(headers: &HeaderMap, uri: &Uri, allowed: &[String]) -> bool {
    let host = headers.get(header::HOST).map(|v| v.to_str().ok());
    let host_ok = match host {
        None => true,
        Some(None) => false,
        Some(Some(host)) => host_allowed(host, allowed),
    };
    host_ok
        && uri
            .authority()
            .is_none_or(|a| host_allowed(a.as_str(), allowed))
}

/// Whether `host` (`name`, `name:port`, `[v6]:port`) names this machine or
/// an allowed name.
pub fn host_allowed(host: &str, allowed: &[String]) -> bool {
    let Some(name) = host_name(host) else {
        return false;
    };
    let name = name.trim_end_matches('.');
    name.eq_ignore_ascii_case("localhost")
        || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
        || allowed.iter().any(|a| a.eq_ignore_ascii_case(name))
}

/// The name of a `Host` value without its port and brackets; `None` when the
/// port is not a number.
fn host_name(host: &str) -> Option<&str> {
    let (name, port) = if let Some(rest) = host.strip_prefix('[') {
        let (v6, after) = rest.split_once(']')?;
        (v6, after.strip_prefix(':'))
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (host, None),
        }
    };
    let port_ok = port.is_none_or(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    (port_ok && !name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_and_allowed_names_pass() {
        let allowed = vec!["jobs.internal".to_string()];
        for ok in [
            "localhost",
            "localhost:8080",
            "LOCALHOST.:1",
            "127.0.0.1:8080",
            "127.9.9.9",
            "[::1]:8080",
            "[::1]",
            "jobs.internal:8080",
            "Jobs.Internal",
        ] {
            assert!(host_allowed(ok, &allowed), "{ok}");
        }
        for bad in [
            "evil.example:8080",
            "localhost.evil.example",
            "127.0.0.1.evil.example",
            "10.0.0.1:8080",
            "[::2]:80",
            "[::1",
            "localhost:x",
            "localhost:",
            "",
            ":8080",
            "jobs.internal.evil",
        ] {
            assert!(!host_allowed(bad, &allowed), "{bad}");
        }
    }
}
