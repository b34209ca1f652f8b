//! `ReservationState` in the API description. The enum is the domain's
//! (`domain::ReservationState`, which names its states once); its schema is
//! written here, so that the domain carries no API description.

use std::borrow::Cow;

use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::openapi::RefOr;

use crate::domain::{ExpectationState, ReservationState};

impl utoipa::PartialSchema for ReservationState {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .description(Some("A reservation's state."))
            .enum_values(Some(ReservationState::ALL.iter().map(|s| s.as_str())))
            .into()
    }
}

impl utoipa::ToSchema for ReservationState {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("ReservationState")
    }
}

impl utoipa::PartialSchema for ExpectationState {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .description(Some(
                "An expected receipt's state: open (what is outstanding is incoming) or \
                 cancelled (nothing more is coming).",
            ))
            .enum_values(Some(ExpectationState::ALL.iter().map(|s| s.as_str())))
            .into()
    }
}

impl utoipa::ToSchema for ExpectationState {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("ExpectationState")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The schema's names are the ones the answers carry.
    #[test]
    fn the_schema_names_what_serde_writes() {
        for s in ReservationState::ALL {
            assert_eq!(serde_json::to_value(s).expect("a state"), s.as_str());
        }
        for s in ExpectationState::ALL {
            assert_eq!(serde_json::to_value(s).expect("a state"), s.as_str());
        }
    }
}
