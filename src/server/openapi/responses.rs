//! The answers that do not depend on the route, added to every operation
//! that can give them: the route attributes list only what is their own.
//!
//! - Every operation that needs a key: 401, 403, 429 (with `Retry-After`)
//!   and 500.
//! - Every operation without a key: 429 (with `Retry-After`), the budget per
//!   client address.
//! - Every operation: 503 with `Retry-After` (the request timeout and the
//!   connection cap apply to every route).
//! - Every operation with parameters or a body: 400.
//! - Every operation with a body: 413 and 415.
//! - Every command: 409 `ARCHIVED`; every read of the log: 410
//!   `HISTORY_ARCHIVED` (archived partitions that left the database).
//! - Every answer of every operation: the `X-Correlation-Id` header.
//!
//! And two repairs of what utoipa (5.5) writes:
//! - it leaves out `required` on parameters whose schema comes from
//!   `schema_with`, and OpenAPI requires every path parameter to be
//!   required, so they are marked here;
//! - for an optional body (`request_body = Option<T>`) it writes a required
//!   body that may be JSON `null`. The server takes no body or an object,
//!   never `null`, so such a body becomes an optional `T`.

use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::path::{Operation, ParameterIn};
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::schema::{ObjectBuilder, Schema, SchemaType, Type};
use utoipa::openapi::{ContentBuilder, OpenApi, Ref, RefOr, Required};
use utoipa::Modify;

use axum::http::StatusCode;

use crate::limits::MAX_REQUEST_BODY_BYTES;
use crate::server::error::codes_with_status;

pub struct Shared;

/// An error answer with `status`, described by the codes that status
/// carries (`error_statuses`, the error type's own table) and `what`.
fn error_with(status: StatusCode, what: &str) -> ResponseBuilder {
    error(&format!(
        "{}: {what}",
        codes_with_status(status).join(" or ")
    ))
}

fn error(description: &str) -> ResponseBuilder {
    ResponseBuilder::new().description(description).content(
        "application/json",
        ContentBuilder::new()
            .schema(Some(RefOr::Ref(Ref::from_schema_name("ErrorBody"))))
            .build(),
    )
}

fn retry_after(r: ResponseBuilder) -> ResponseBuilder {
    r.header(
        "Retry-After",
        HeaderBuilder::new()
            .schema(
                ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .minimum(Some(0)),
            )
            .description(Some("Seconds to wait before sending the request again."))
            .build(),
    )
}

fn add(op: &mut Operation, status: &str, response: ResponseBuilder) {
    op.responses
        .responses
        .entry(status.to_owned())
        .or_insert_with(|| RefOr::T(response.build()));
}

fn correlation_header(response: &mut Response) {
    response.headers.insert(
        "X-Correlation-Id".to_owned(),
        HeaderBuilder::new()
            .schema(
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .min_length(Some(1)),
            )
            .description(Some(
                "The request's correlation id: the caller's `X-Correlation-Id`, or one made \
                 for it. Error bodies of 5xx answers carry it too.",
            ))
            .build(),
    );
}

impl Modify for Shared {
    fn modify(&self, doc: &mut OpenApi) {
        for (path, item) in doc.paths.paths.iter_mut() {
            if let Some(op) = item.get.as_mut() {
                archived_responses(path, op, false);
            }
            if let Some(op) = item.post.as_mut() {
                archived_responses(path, op, true);
            }
            for op in [&mut item.get, &mut item.post].into_iter().flatten() {
                for p in op.parameters.iter_mut().flatten() {
                    if p.parameter_in == ParameterIn::Path {
                        p.required = Required::True;
                    }
                }
                optional_body(op);
                shared_responses(op);
                for response in op.responses.responses.values_mut() {
                    if let RefOr::T(r) = response {
                        correlation_header(r);
                    }
                }
            }
        }
    }
}

fn optional_body(op: &mut Operation) {
    let Some(body) = op.request_body.as_mut() else {
        return;
    };
    for content in body.content.values_mut() {
        let Some(RefOr::T(Schema::OneOf(one_of))) = &content.schema else {
            continue;
        };
        let is_null = |s: &RefOr<Schema>| matches!(s, RefOr::T(Schema::Object(o)) if o.schema_type == SchemaType::Type(Type::Null));
        if one_of.items.len() == 2 && one_of.items.iter().any(is_null) {
            let inner = one_of.items.iter().find(|s| !is_null(s)).cloned();
            content.schema = inner;
            body.required = Some(Required::False);
        }
    }
}

/// The reads that answer from the log, and so refuse once what they ask
/// for left the database (`store::cut`).
const HISTORY_READS: &[&str] = &[
    "/v1/events",
    "/v1/events/stream",
    "/v1/reservations/{id}",
    "/v1/expected-receipts/{id}",
    "/v1/orders/{order_id}",
    "/v1/stock/{sku}",
];

/// What archived history is answered with: 410 on a read of the log that
/// would start before the cut; 409 `ARCHIVED` on any command, whose
/// stream may have left (every command names one).
fn archived_responses(path: &str, op: &mut Operation, is_post: bool) {
    if is_post {
        let what = "ARCHIVED: the stream named left the database with an archived partition \
                    (`stockledger archive --detach`); its answer is in the archive";
        match op.responses.responses.get_mut("409") {
            Some(RefOr::T(r)) => r.description.push_str(&format!("; {what}")),
            _ => add(op, "409", error(what)),
        }
    } else if HISTORY_READS.contains(&path) {
        add(
            op,
            "410",
            error_with(
                StatusCode::GONE,
                "what the read asks for left the database with archived partitions \
                 (`stockledger archive --detach`); the archive holds it, and \
                 `details.whole_after` is the cursor after which the log here is whole",
            ),
        );
    }
}

fn shared_responses(op: &mut Operation) {
    input_responses(op);
    access_responses(op);
    // Any route: the request timeout, and a connection refused at the cap.
    add(
        op,
        "503",
        retry_after(error_with(
            StatusCode::SERVICE_UNAVAILABLE,
            "the request could not be served now; sending it again with the same ids is safe",
        )),
    );
}

/// What bad input is answered with: 400 for any operation with parameters
/// or a body, 413 and 415 for one with a body.
fn input_responses(op: &mut Operation) {
    let has_body = op.request_body.is_some();
    let has_params = op.parameters.as_ref().is_some_and(|p| !p.is_empty());
    if has_params || has_body {
        add(
            op,
            "400",
            error_with(
                StatusCode::BAD_REQUEST,
                "a parameter or the body breaks the contract (an INVALID_ARGUMENT's details name \
                 the field and the reason)",
            ),
        );
    }
    if has_body {
        add(
            op,
            "413",
            error_with(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!("the body is over {MAX_REQUEST_BODY_BYTES} bytes"),
            ),
        );
        add(
            op,
            "415",
            error_with(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "a body not sent as application/json",
            ),
        );
    }
}

/// What the key and the rate limits are answered with: 401, 403, 429 and
/// 500 on an operation that needs a key; 429 per client address on one that
/// does not.
fn access_responses(op: &mut Operation) {
    let keyed = op.security.as_ref().is_some_and(|s| !s.is_empty());
    if !keyed {
        // The routes without a key share a budget per client address.
        add(
            op,
            "429",
            retry_after(error_with(
                StatusCode::TOO_MANY_REQUESTS,
                "too many requests from this address",
            )),
        );
        return;
    }
    add(
        op,
        "401",
        error_with(StatusCode::UNAUTHORIZED, "no key, or not a live one"),
    );
    add(
        op,
        "403",
        error_with(StatusCode::FORBIDDEN, "the key's role may not do this"),
    );
    add(
        op,
        "429",
        retry_after(error_with(
            StatusCode::TOO_MANY_REQUESTS,
            "too many requests for this key",
        )),
    );
    add(
        op,
        "500",
        error_with(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the server log has the details under the correlation id",
        ),
    );
}
