//! The requests' schemas in the API description. The request types are the
//! domain's (each command's module reads its own request), and the domain
//! carries no API description, so their schemas are written here, field by
//! field from `contract`'s rules. A test holds each list of fields to what
//! serde reads: the same names, and the same ones required.

use std::borrow::Cow;

use utoipa::openapi::schema::{AdditionalProperties, ObjectBuilder, Schema, Type};
use utoipa::openapi::RefOr;

use crate::api::contract;
use crate::domain::command::{
    AdjustRequest, ChangeExpectedRequest, ConfirmLinesRequest, CountRequest, ExpectRequest,
    ExtendRequest, LimitRequest, LineRequest, ReceiveRequest, ReleaseLinesRequest,
    ReorderPointRequest, ReserveRequest, TransferRequest,
};

/// Implements `ToSchema` for each request: an object of exactly the listed
/// fields (unknown fields are refused), each with its rule, required unless
/// marked `optional`.
macro_rules! request_schemas {
    ($($ty:ident $(($doc:literal))? {
        $($field:ident: $rule:path $(, $optional:ident)?;)*
    })*) => {
        $(
            impl utoipa::PartialSchema for $ty {
                fn schema() -> RefOr<Schema> {
                    #[allow(unused_mut)]
                    let mut object = ObjectBuilder::new()
                        .schema_type(Type::Object)
                        .additional_properties(Some(AdditionalProperties::FreeForm(false)));
                    $(object = object.description(Some($doc));)?
                    $(
                        object = object.property(stringify!($field), $rule());
                        if !request_schemas!(@optional $($optional)?) {
                            object = object.required(stringify!($field));
                        }
                    )*
                    object.into()
                }
            }

            impl utoipa::ToSchema for $ty {
                fn name() -> Cow<'static, str> {
                    Cow::Borrowed(stringify!($ty))
                }
            }
        )*

        /// Every request's name and fields, each with whether it is required.
        #[cfg(test)]
        fn documented() -> Vec<(&'static str, Vec<(&'static str, bool)>)> {
            vec![$((stringify!($ty), vec![
                $((stringify!($field), !request_schemas!(@optional $($optional)?)),)*
            ]),)*]
        }
    };
    (@optional optional) => { true };
    (@optional) => { false };
}

request_schemas! {
    LineRequest {
        sku: contract::id;
        location: contract::location, optional;
        quantity: contract::quantity;
    }
    ReceiveRequest {
        receipt_id: contract::id;
        sku: contract::id;
        location: contract::location, optional;
        quantity: contract::quantity;
        against: contract::expected_id, optional;
    }
    ExpectRequest {
        expected_id: contract::id;
        sku: contract::id;
        location: contract::location, optional;
        quantity: contract::expected_units;
        expected_on: contract::date;
    }
    ChangeExpectedRequest {
        change_id: contract::id;
        quantity: contract::expected_units;
        expected_on: contract::date;
    }
    AdjustRequest {
        adjustment_id: contract::id;
        sku: contract::id;
        location: contract::location, optional;
        delta: contract::delta;
        reason: contract::reason;
    }
    TransferRequest {
        transfer_id: contract::id;
        sku: contract::id;
        from_location: contract::from_location;
        to_location: contract::to_location;
        quantity: contract::quantity;
    }
    CountRequest {
        count_id: contract::id;
        sku: contract::id;
        location: contract::location, optional;
        counted: contract::counted;
    }
    LimitRequest ("Sets the most of an item one order may reserve, or lifts the limit.") {
        limit_id: contract::id;
        sku: contract::id;
        location: contract::location, optional;
        max_per_order: contract::max_per_order;
    }
    ReorderPointRequest ("Sets below how many available units an item is low, or removes the point.") {
        reorder_point_id: contract::id;
        sku: contract::id;
        location: contract::location, optional;
        reorder_point: contract::reorder_point;
    }
    ReserveRequest {
        reservation_id: contract::id;
        order_id: contract::id;
        lines: contract::lines;
        ttl_seconds: contract::ttl_seconds, optional;
        backorder: contract::backorder, optional;
        latest_arrival: contract::latest_arrival, optional;
    }
    ConfirmLinesRequest ("Confirms part of a reservation: some of its lines, or some units of them.") {
        confirmation_id: contract::id;
        lines: contract::lines;
    }
    ReleaseLinesRequest ("Releases part of a reservation: some of its lines, or some units of them.") {
        release_id: contract::id;
        lines: contract::lines;
        reason: contract::release_reason, optional;
    }
    ExtendRequest ("Keeps a reservation's hold for `ttl_seconds` from now.") {
        extension_id: contract::id;
        ttl_seconds: contract::extension_ttl;
    }
}

#[cfg(test)]
mod tests {
    use serde::de::DeserializeOwned;
    use serde_json::{json, Map, Value};

    use super::*;

    /// A value of the right JSON type for each field name the requests use.
    fn sample(field: &str) -> Value {
        match field {
            "quantity" | "delta" | "counted" | "ttl_seconds" | "max_per_order"
            | "reorder_point" => json!(5),
            "lines" => json!([{"sku": "a", "quantity": 1}]),
            "expected_on" | "latest_arrival" => json!("2026-12-10"),
            "backorder" => json!(true),
            _ => json!("a"),
        }
    }

    /// Whether serde reads `body` as the request called `name`; if it does,
    /// the names of the fields the request writes back (every field it has,
    /// also one the schema might have left out).
    fn reads(name: &str, body: &Map<String, Value>) -> bool {
        fields_of(name, body).is_some()
    }

    fn fields_of(name: &str, body: &Map<String, Value>) -> Option<Vec<String>> {
        fn try_as<T: DeserializeOwned + serde::Serialize>(
            body: &Map<String, Value>,
        ) -> Option<Vec<String>> {
            let request = serde_json::from_value::<T>(Value::Object(body.clone())).ok()?;
            let written = serde_json::to_value(request).expect("a request serialises");
            Some(written.as_object()?.keys().cloned().collect())
        }
        match name {
            "LineRequest" => try_as::<LineRequest>(body),
            "ReceiveRequest" => try_as::<ReceiveRequest>(body),
            "AdjustRequest" => try_as::<AdjustRequest>(body),
            "TransferRequest" => try_as::<TransferRequest>(body),
            "CountRequest" => try_as::<CountRequest>(body),
            "LimitRequest" => try_as::<LimitRequest>(body),
            "ReorderPointRequest" => try_as::<ReorderPointRequest>(body),
            "ReserveRequest" => try_as::<ReserveRequest>(body),
            "ConfirmLinesRequest" => try_as::<ConfirmLinesRequest>(body),
            "ReleaseLinesRequest" => try_as::<ReleaseLinesRequest>(body),
            "ExtendRequest" => try_as::<ExtendRequest>(body),
            "ExpectRequest" => try_as::<ExpectRequest>(body),
            "ChangeExpectedRequest" => try_as::<ChangeExpectedRequest>(body),
            other => panic!("no request called {other}"),
        }
    }

    /// serde reads every documented field, needs exactly the ones documented
    /// as required, refuses any field that is not documented, and the request
    /// has no field the schema leaves out.
    #[test]
    fn each_schema_lists_exactly_the_fields_serde_reads() {
        for (name, fields) in documented() {
            let all: Map<String, Value> = fields
                .iter()
                .map(|(f, _)| (f.to_string(), sample(f)))
                .collect();
            assert!(reads(name, &all), "{name} with every documented field");
            for (field, required) in &fields {
                let mut without = all.clone();
                without.remove(*field);
                assert_eq!(
                    reads(name, &without),
                    !required,
                    "{name} without {field}: documented as required={required}"
                );
            }
            let mut written = fields_of(name, &all).expect("read above");
            let mut names: Vec<String> = fields.iter().map(|(f, _)| f.to_string()).collect();
            written.sort();
            names.sort();
            assert_eq!(
                written, names,
                "{name}: the schema lists every field the request has"
            );
            let mut extra = all.clone();
            extra.insert("undocumented".into(), json!(1));
            assert!(!reads(name, &extra), "{name} refuses an undocumented field");
        }
    }
}
