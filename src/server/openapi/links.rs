//! OpenAPI links: where a client goes next from an answer. A created
//! reservation leads to its confirm, release, read and order; a receipt or
//! an adjustment to its item's stock; a page of the log to the next page.
//! Clients generated from the document and stateful testers follow them.
//!
//! They are added to the serialised document rather than through utoipa's
//! `Link`, which (in 5.5) writes its fields in snake case (`operation_id`)
//! where OpenAPI says `operationId`.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::server::commands::{
    __path_adjust, __path_confirm, __path_confirm_lines, __path_count, __path_extend, __path_limit,
    __path_receive, __path_release, __path_release_lines, __path_reorder_point, __path_reserve,
    __path_transfer,
};
use crate::server::reads::{__path_events, __path_order, __path_reservation, __path_stock};

/// The operation id of a handler, from its own `#[utoipa::path]`: links name
/// handlers, so a link to a route that is gone does not compile, and a
/// renamed operation takes its links with it.
fn op<P: utoipa::Path>() -> String {
    P::operation()
        .operation_id
        .expect("every route names its operation")
}

/// (from operation, link name, to operation, [(parameter, runtime expression)]).
type LinkSpec = (
    String,
    &'static str,
    String,
    &'static [(&'static str, &'static str)],
);

/// Links that carry part of the next request's body: from a receipt to a
/// reservation of one unit of what was received, which the ledger can grant.
fn body_links() -> [(String, &'static str, String, Value); 1] {
    [(
        op::<__path_receive>(),
        "reserve",
        op::<__path_reserve>(),
        json!({"lines": [{
            "sku": "$response.body#/sku",
            "location": "$response.body#/location",
            "quantity": 1,
        }]}),
    )]
}

const RESERVATION: &[(&str, &str)] = &[("id", "$response.body#/reservation_id")];

const ITEM: &[(&str, &str)] = &[
    ("sku", "$response.body#/sku"),
    ("location", "$response.body#/location"),
];

/// A transfer's source and destination, each to its stock.
const FROM: &[(&str, &str)] = &[
    ("sku", "$response.body#/sku"),
    ("location", "$response.body#/from_location"),
];
const TO: &[(&str, &str)] = &[
    ("sku", "$response.body#/sku"),
    ("location", "$response.body#/to_location"),
];

const ORDER: &[(&str, &str)] = &[("order_id", "$response.body#/order_id")];

const NEXT_PAGE: &[(&str, &str)] = &[("after", "$response.body#/next")];

/// Every link: `from => name => to, parameters`, each end a handler's path type.
macro_rules! links {
    ($($from:ident => $name:literal => $to:ident, $parameters:expr;)*) => {
        vec![$((op::<$from>(), $name, op::<$to>(), $parameters)),*]
    };
}

fn links() -> Vec<LinkSpec> {
    links! {
        __path_reserve => "confirm" => __path_confirm, RESERVATION;
        __path_reserve => "release" => __path_release, RESERVATION;
        __path_reserve => "read" => __path_reservation, RESERVATION;
        __path_reserve => "order" => __path_order, ORDER;
        __path_confirm => "read" => __path_reservation, RESERVATION;
        __path_confirm => "release" => __path_release, RESERVATION;
        __path_release => "read" => __path_reservation, RESERVATION;
        __path_release => "confirm" => __path_confirm, RESERVATION;
        __path_reservation => "confirm" => __path_confirm, RESERVATION;
        __path_reservation => "release" => __path_release, RESERVATION;
        __path_reserve => "confirmLines" => __path_confirm_lines, RESERVATION;
        __path_reserve => "releaseLines" => __path_release_lines, RESERVATION;
        __path_reserve => "extend" => __path_extend, RESERVATION;
        __path_confirm_lines => "read" => __path_reservation, RESERVATION;
        __path_confirm_lines => "confirm" => __path_confirm, RESERVATION;
        __path_release_lines => "read" => __path_reservation, RESERVATION;
        __path_release_lines => "release" => __path_release, RESERVATION;
        __path_extend => "read" => __path_reservation, RESERVATION;
        __path_extend => "confirm" => __path_confirm, RESERVATION;
        __path_receive => "stock" => __path_stock, ITEM;
        __path_adjust => "stock" => __path_stock, ITEM;
        __path_count => "stock" => __path_stock, ITEM;
        __path_limit => "stock" => __path_stock, ITEM;
        __path_reorder_point => "stock" => __path_stock, ITEM;
        __path_transfer => "source" => __path_stock, FROM;
        __path_transfer => "destination" => __path_stock, TO;
        __path_events => "next" => __path_events, NEXT_PAGE;
    }
}

/// Every operation of the document, by operation id.
fn operations(doc: &mut Value) -> BTreeMap<String, &mut Value> {
    let mut all = BTreeMap::new();
    let paths = doc["paths"].as_object_mut().expect("a document has paths");
    for item in paths.values_mut() {
        for op in item
            .as_object_mut()
            .into_iter()
            .flat_map(|i| i.values_mut())
        {
            if let Some(id) = op["operationId"].as_str().map(str::to_owned) {
                all.insert(id, op);
            }
        }
    }
    all
}

/// Adds every link to the 2xx answers of the operation it leaves from.
/// Panics (at the first request for the document, and in its test) when a
/// link names an operation the document does not hold (a handler that is
/// not in the route table).
pub fn add(doc: &mut Value) {
    let with_parameters = links().into_iter().map(|(from, name, to, parameters)| {
        let parameters: Map<String, Value> = parameters
            .iter()
            .map(|(p, e)| ((*p).to_owned(), json!(e)))
            .collect();
        (
            from,
            name,
            json!({"operationId": to, "parameters": parameters}),
        )
    });
    let with_bodies = body_links().into_iter().map(|(from, name, to, body)| {
        (from, name, json!({"operationId": to, "requestBody": body}))
    });
    let mut ops = operations(doc);
    for (from, name, link) in with_parameters.chain(with_bodies) {
        let to = link["operationId"]
            .as_str()
            .expect("a link names its operation")
            .to_owned();
        assert!(
            ops.contains_key(&to),
            "link {name} of {from} names no operation {to}"
        );
        let op = ops
            .get_mut(&from)
            .unwrap_or_else(|| panic!("link {name} leaves from no operation {from}"));
        let responses = op["responses"].as_object_mut().expect("operations answer");
        for (status, response) in responses.iter_mut() {
            if status.starts_with('2') {
                response["links"][name] = link.clone();
            }
        }
    }
}
