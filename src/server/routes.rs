//! The router: every route of the contract, and the layers every request
//! passes: the observe middleware (correlation id, metrics, the correlation
//! header on the answer), tower-http's trace layer (a span per request and one
//! log line), and tower's timeout, answered as `UNAVAILABLE`.

use std::time::{Duration, Instant};

use axum::error_handling::HandleErrorLayer;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::handler::Handler;
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::MethodRouter;
use axum::{BoxError, Router};
use tower::ServiceBuilder;
use tower_http::trace::TraceLayer;
use tracing::{info, Span};

use crate::domain::Rejection;
use crate::limits::MAX_REQUEST_BODY_BYTES;
use crate::server::error::ApiError;
use crate::server::route_table::{keyed_routes, open_routes};
use crate::server::{ops, AppState};
use utoipa::openapi::path::HttpMethod;

pub const CORRELATION_HEADER: &str = "x-correlation-id";
pub const CAUSATION_HEADER: &str = "x-causation-id";

tokio::task_local! {
    /// The correlation id of the request being answered, for error bodies.
    static CORRELATION_ID: String;
}

/// The correlation id of the request this task is answering, if any.
pub fn current_correlation_id() -> Option<String> {
    CORRELATION_ID.try_with(Clone::clone).ok()
}

/// A request's correlation id, put in its extensions for the trace span.
#[derive(Clone)]
struct Correlation(String);

/// Adds routes to a router, each at the method and path its description
/// names (`route_table.rs`).
macro_rules! add_routes {
    ($($handler:path, $described:ty;)*) => {
        |router: Router<AppState>| {
            router$(.route(
                &<$described as utoipa::Path>::path(),
                served::<_, _>(<$described as utoipa::Path>::methods(), $handler),
            ))*
        }
    };
}

/// The handler, at each of the methods its description names.
fn served<H, T>(methods: Vec<HttpMethod>, handler: H) -> MethodRouter<AppState>
where
    H: Handler<T, AppState>,
    T: 'static,
{
    methods
        .into_iter()
        .fold(MethodRouter::new(), |router, method| match method {
            HttpMethod::Get => router.get(handler.clone()),
            HttpMethod::Post => router.post(handler.clone()),
            _ => unreachable!("the contract serves only GET and POST routes"),
        })
}

/// The router with every route of the contract.
pub fn router(state: AppState) -> Router {
    let keyed = keyed_routes!(add_routes)(Router::new());
    // The routes that need no key: a budget per client address.
    // The console's assets too: they are not part of the API description
    // (they are a page, not the contract), and need no key either.
    let open = open_routes!(add_routes)(Router::new())
        .merge(crate::server::console::routes())
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            ops::ops_limit,
        ));
    keyed
        .merge(open)
        .fallback(|| async {
            ApiError::Rejected(Rejection::NotFound {
                what: "route",
                key: "here".into(),
            })
        })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .layer(middleware::from_fn_with_state(
            state.clone(),
            crate::server::dev_guard::only_loopback,
        ))
        .layer(
            ServiceBuilder::new()
                .layer(middleware::from_fn_with_state(state.clone(), observe))
                .layer(
                    TraceLayer::new_for_http()
                        .make_span_with(request_span)
                        .on_request(())
                        .on_response(log_response)
                        .on_failure(()),
                )
                .layer(HandleErrorLayer::new(timed_out))
                .timeout(state.config.request_timeout),
        )
        .layer(DefaultBodyLimit::max(MAX_REQUEST_BODY_BYTES))
        .with_state(state)
}

/// The span of one request. The correlation id comes from the caller: it is
/// recorded with Debug, so quotes, spaces and control characters are escaped
/// and cannot forge log fields.
fn request_span(req: &Request) -> Span {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", MatchedPath::as_str);
    let correlation = req.extensions().get::<Correlation>().map(|c| c.0.as_str());
    tracing::info_span!(
        "request",
        method = %req.method(),
        route = %route,
        correlation_id = ?correlation.unwrap_or_default()
    )
}

fn log_response(response: &Response, took: Duration, _span: &Span) {
    let status = response.status().as_u16();
    info!(status, millis = took.as_secs_f64() * 1e3, "request");
}

/// A request that ran past the request timeout.
async fn timed_out(e: BoxError) -> ApiError {
    if e.is::<tower::timeout::error::Elapsed>() {
        ApiError::unavailable("the request took longer than the server allows")
    } else {
        ApiError::unavailable("the request could not be served")
    }
}

/// Per request: a correlation id (the caller's when it is a valid one, else a new one), in scope for
/// error bodies and in the extensions for the span, the metrics, and the
/// correlation header on the answer.
async fn observe(
    State(state): State<AppState>,
    matched: Option<MatchedPath>,
    mut req: Request,
    next: Next,
) -> Response {
    let route = matched.map_or_else(|| "unmatched".to_owned(), |m| m.as_str().to_owned());
    let correlation = req
        .headers()
        .get(CORRELATION_HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| crate::domain::context::is_metadata_id(v))
        .map_or_else(|| uuid::Uuid::new_v4().to_string(), str::to_owned);
    req.extensions_mut()
        .insert(Correlation(correlation.clone()));
    let started = Instant::now();
    let mut response = CORRELATION_ID
        .scope(correlation.clone(), next.run(req))
        .await;
    let status = response.status().as_u16();
    state.metrics.request(&route, status, started.elapsed());
    if let Ok(v) = HeaderValue::from_str(&correlation) {
        response
            .headers_mut()
            .insert(HeaderName::from_static(CORRELATION_HEADER), v);
    }
    protect(response.headers_mut());
    response
}

/// Headers every answer carries, errors included: no answer may be sniffed
/// into another content type by a browser, and none may be kept by a cache
/// (stock figures, keys' errors and metrics are all of the moment, and some
/// are answers to one caller's key).
pub fn protect(headers: &mut axum::http::HeaderMap) {
    headers.insert(
        axum::http::header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        axum::http::header::CACHE_CONTROL,
        HeaderValue::from_static("no-store"),
    );
}
