//! Development mode's guard against DNS rebinding. `--dev` checks no keys
//! and listens on loopback only, but a page on any site can make a browser
//! send requests to `127.0.0.1`: directly (its `Origin` is the page's), or
//! through a name of the attacker's that resolves to loopback (its `Host`
//! is that name). So a request is served only when it is addressed to this
//! server by a loopback name (`Host`: `localhost`, or a loopback address,
//! at the bound port) and, when it says where it comes from (`Origin`),
//! comes from such an origin too. Anything else is `403 FORBIDDEN`, and
//! nothing runs.

use std::net::{IpAddr, SocketAddr};

use axum::extract::{Request, State};
use axum::http::header::{HOST, ORIGIN};
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::server::error::ApiError;
use crate::server::AppState;

/// In development mode, answers the request only when its headers address
/// the server at its bound address from loopback (see the module); in any
/// other mode, passes it on. Inside `observe`, so a refusal carries the
/// headers, the correlation id and the count every answer has.
pub async fn only_loopback(State(s): State<AppState>, req: Request, next: Next) -> Response {
    let Some(bound) = s.config.dev.then_some(s.config.bound).flatten() else {
        return next.run(req).await;
    };
    match refusal(bound, req.headers()) {
        None => next.run(req).await,
        Some(why) => ApiError::ForeignOrigin(why).into_response(),
    }
}

/// Why a request with `headers` is not served in development mode.
pub fn refusal(bound: SocketAddr, headers: &HeaderMap) -> Option<String> {
    let Some(host) = headers.get(HOST) else {
        return Some("a request without a Host header".into());
    };
    let host = host.to_str().unwrap_or_default();
    if !addresses_here(host, bound.port()) {
        return Some(format!(
            "Host {:?} is not this server's loopback address",
            truncated(host)
        ));
    }
    match headers.get(ORIGIN).map(|o| o.to_str().unwrap_or_default()) {
        None => None,
        Some(origin) => {
            let authority = match origin.split_once("://") {
                Some(("http", a)) => Some(with_port(a, 80)),
                Some(("https", a)) => Some(with_port(a, 443)),
                _ => None,
            };
            match authority {
                Some(a) if addresses_here(&a, bound.port()) => None,
                _ => Some(format!(
                    "a request from origin {:?}, not from this server's loopback address",
                    truncated(origin)
                )),
            }
        }
    }
}

/// `authority` with its scheme's `default` port when it names none.
fn with_port(authority: &str, default: u16) -> String {
    let has_port = authority
        .rsplit_once(':')
        .is_some_and(|(_, p)| !p.contains(']'));
    if has_port {
        authority.to_owned()
    } else {
        format!("{authority}:{default}")
    }
}

/// Whether `authority` (`host[:port]`) names a loopback host at `port`.
/// Without a port it must be the scheme's default, which a server on
/// another port is not.
fn addresses_here(authority: &str, port: u16) -> bool {
    let (host, given) = match authority.rsplit_once(':') {
        // `[::1]:8080`, `localhost:8080`; a bare `[::1]` has no port.
        Some((h, p)) if !p.contains(']') => (h, p.parse::<u16>().ok()),
        _ => (authority, Some(80)),
    };
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.to_canonical().is_loopback());
    loopback && given == Some(port)
}

/// What of a header a refusal repeats: enough to recognise it.
fn truncated(value: &str) -> String {
    value.chars().take(MAX_ECHOED_CHARS).collect()
}

/// How many characters of a refused `Host` or `Origin` the answer repeats.
const MAX_ECHOED_CHARS: usize = 100;

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (name, value) in pairs {
            h.insert(*name, value.parse().unwrap());
        }
        h
    }

    #[test]
    fn only_loopback_names_at_the_bound_port_pass() {
        let bound: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let cases: &[(&[(&'static str, &str)], bool)] = &[
            (&[("host", "127.0.0.1:8080")], true),
            (&[("host", "localhost:8080")], true),
            (&[("host", "LOCALHOST:8080")], true),
            (&[("host", "[::1]:8080")], true),
            (&[("host", "127.1.2.3:8080")], true),
            (&[("host", "attacker.example:8080")], false),
            (&[("host", "attacker.example")], false),
            (&[("host", "127.0.0.1:9090")], false),
            (&[("host", "127.0.0.1")], false),
            (&[("host", "localhost.attacker.example:8080")], false),
            (&[], false),
            (
                &[
                    ("host", "127.0.0.1:8080"),
                    ("origin", "http://localhost:8080"),
                ],
                true,
            ),
            (
                &[
                    ("host", "127.0.0.1:8080"),
                    ("origin", "https://evil.example"),
                ],
                false,
            ),
            (&[("host", "127.0.0.1:8080"), ("origin", "null")], false),
            (&[("host", "localhost.:8080")], false),
            (&[("host", "user@localhost:8080")], false),
            (
                &[
                    ("host", "127.0.0.1:8080"),
                    ("origin", "http://user@localhost:8080"),
                ],
                false,
            ),
        ];
        for (pairs, served) in cases {
            let why = refusal(bound, &headers(pairs));
            assert_eq!(why.is_none(), *served, "{pairs:?}: {why:?}");
        }
    }

    #[test]
    fn the_default_port_needs_no_port_in_host() {
        let bound: SocketAddr = "127.0.0.1:80".parse().unwrap();
        assert_eq!(refusal(bound, &headers(&[("host", "localhost")])), None);
        assert_eq!(refusal(bound, &headers(&[("host", "[::1]")])), None);
        let from = |origin| headers(&[("host", "localhost"), ("origin", origin)]);
        assert_eq!(refusal(bound, &from("http://localhost")), None);
        assert!(refusal(bound, &from("https://localhost")).is_some());
    }
}
