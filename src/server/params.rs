//! The parameters of the routes that are not bodies: path segments and the
//! command headers. Each type is both what a handler extracts and what the
//! API description says (`IntoParams`), so the two cannot disagree; the
//! schemas come from `api::contract`, built from the limits the domain
//! checks.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::HeaderMap;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::api::contract;
use crate::domain::{CommandContext, Rejection};
use crate::server::auth::Caller;
use crate::server::error::ApiError;
use crate::server::{CAUSATION_HEADER, CORRELATION_HEADER};

/// `/v1/reservations/{id}` and its confirm and release.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct ReservationPath {
    /// The reservation id the caller chose.
    #[param(schema_with = contract::id, required = true)]
    pub id: String,
}

/// `/v1/expected-receipts/{id}`.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct ExpectedPath {
    /// The expected receipt id the caller chose.
    #[param(schema_with = contract::id, required = true)]
    pub id: String,
}

/// `/v1/stock/{sku}`.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct SkuPath {
    #[param(schema_with = contract::id, required = true)]
    pub sku: String,
}

/// `/v1/orders/{order_id}`.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct OrderPath {
    #[param(schema_with = contract::id, required = true)]
    pub order_id: String,
}

/// The headers a command may carry, kept in its events' metadata. A header
/// that is present must hold a valid id: one that is empty, too long, or not
/// printable ASCII is `INVALID_ARGUMENT` naming it, never dropped in silence.
#[derive(IntoParams)]
#[into_params(parameter_in = Header)]
pub struct CommandHeaders {
    /// Ties the command to the caller's own trace; echoed on the answer.
    #[param(rename = "X-Correlation-Id", schema_with = contract::metadata_id)]
    pub correlation_id: Option<String>,
    /// The message or command that caused this one.
    #[param(rename = "X-Causation-Id", schema_with = contract::metadata_id)]
    pub causation_id: Option<String>,
}

impl CommandHeaders {
    /// The command's context: the caller and these ids, validated.
    pub fn context(self, caller: &Caller) -> Result<CommandContext, ApiError> {
        let mut ctx = CommandContext::new(format!("key:{}", caller.name));
        ctx.correlation_id = self.correlation_id;
        ctx.causation_id = self.causation_id;
        ctx.validate()?;
        Ok(ctx)
    }
}

fn header(headers: &HeaderMap, name: &str, field: &str) -> Result<Option<String>, Rejection> {
    let mut values = headers.get_all(name).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(Rejection::invalid(field, "must be sent once"));
    }
    // Bytes outside printable ASCII are refused by the context's rule; read
    // them lossily so that the rule, not this, names the problem.
    Ok(Some(String::from_utf8_lossy(value.as_bytes()).into_owned()))
}

impl<S: Send + Sync> FromRequestParts<S> for CommandHeaders {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        Ok(CommandHeaders {
            correlation_id: header(&parts.headers, CORRELATION_HEADER, "correlation_id")?,
            causation_id: header(&parts.headers, CAUSATION_HEADER, "causation_id")?,
        })
    }
}
