//! The operator console (`/console/`): one page and its script and style,
//! built into the binary (`src/server/console/`), nothing fetched from
//! elsewhere. The assets hold no data and need no key; the page asks for
//! one, keeps it for the tab only, and reads the API with it, so a role sees
//! on the page only what it may read there.
//!
//! Every answer carries a strict Content-Security-Policy: scripts, styles and
//! requests from this origin only, no inline script or style, no framing.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;

use crate::server::AppState;

/// Where the console is served.
pub const CONSOLE_PATH: &str = "/console/";

/// The policy every console answer carries.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

const INDEX: &str = include_str!("console/index.html");
const SCRIPT: &str = include_str!("console/app.js");
const STYLE: &str = include_str!("console/app.css");
const ICON: &str = include_str!("console/icon.svg");

/// The console's routes (rate-limited per address by the caller, as the
/// other routes that need no key).
pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/console",
            get(|| async { Redirect::permanent(CONSOLE_PATH) }),
        )
        .route(
            CONSOLE_PATH,
            get(|| async { asset(INDEX, "text/html; charset=utf-8") }),
        )
        .route(
            "/console/app.js",
            get(|| async { asset(SCRIPT, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/console/app.css",
            get(|| async { asset(STYLE, "text/css; charset=utf-8") }),
        )
        .route(
            "/console/icon.svg",
            get(|| async { asset(ICON, "image/svg+xml") }),
        )
}

fn asset(body: &'static str, content_type: &'static str) -> Response {
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(CONTENT_SECURITY_POLICY),
            ),
            (
                header::REFERRER_POLICY,
                HeaderValue::from_static("no-referrer"),
            ),
            (header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
        ],
        body,
    )
        .into_response()
}
