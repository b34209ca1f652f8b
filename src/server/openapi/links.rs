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

/// (from operation, link name, to operation, [(parameter, runtime expression)]).
type LinkSpec = (
    &'static str,
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

/// Links that carry part of the next request's body: from a receipt to a
/// reservation of one unit of what was received, which the ledger can grant.
fn body_links() -> [(&'static str, &'static str, &'static str, Value); 1] {
    [(
        "receiveStock",
        "reserve",
        "reserve",
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

const LINKS: &[LinkSpec] = &[
    ("reserve", "confirm", "confirmReservation", RESERVATION),
    ("reserve", "release", "releaseReservation", RESERVATION),
    ("reserve", "read", "getReservation", RESERVATION),
    (
        "reserve",
        "order",
        "getOrder",
        &[("order_id", "$response.body#/order_id")],
    ),
    ("confirmReservation", "read", "getReservation", RESERVATION),
    (
        "confirmReservation",
        "release",
        "releaseReservation",
        RESERVATION,
    ),
    ("releaseReservation", "read", "getReservation", RESERVATION),
    (
        "releaseReservation",
        "confirm",
        "confirmReservation",
        RESERVATION,
    ),
    (
        "getReservation",
        "confirm",
        "confirmReservation",
        RESERVATION,
    ),
    (
        "getReservation",
        "release",
        "releaseReservation",
        RESERVATION,
    ),
    ("reserve", "confirmLines", "confirmLines", RESERVATION),
    ("reserve", "releaseLines", "releaseLines", RESERVATION),
    ("reserve", "extend", "extendReservation", RESERVATION),
    ("confirmLines", "read", "getReservation", RESERVATION),
    ("confirmLines", "confirm", "confirmReservation", RESERVATION),
    ("releaseLines", "read", "getReservation", RESERVATION),
    ("releaseLines", "release", "releaseReservation", RESERVATION),
    ("extendReservation", "read", "getReservation", RESERVATION),
    (
        "extendReservation",
        "confirm",
        "confirmReservation",
        RESERVATION,
    ),
    ("receiveStock", "stock", "getStock", ITEM),
    ("adjustStock", "stock", "getStock", ITEM),
    ("countStock", "stock", "getStock", ITEM),
    ("transferStock", "source", "getStock", FROM),
    ("transferStock", "destination", "getStock", TO),
    (
        "listEvents",
        "next",
        "listEvents",
        &[("after", "$response.body#/next")],
    ),
];

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
/// link names an operation that does not exist.
pub fn add(doc: &mut Value) {
    let with_parameters = LINKS.iter().map(|(from, name, to, parameters)| {
        let parameters: Map<String, Value> = parameters
            .iter()
            .map(|(p, e)| ((*p).to_owned(), json!(e)))
            .collect();
        (
            *from,
            *name,
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
            .expect("a link names its operation");
        assert!(
            ops.contains_key(to),
            "link {name} of {from} names no operation {to}"
        );
        let op = ops
            .get_mut(from)
            .unwrap_or_else(|| panic!("link {name} leaves from no operation {from}"));
        let responses = op["responses"].as_object_mut().expect("operations answer");
        for (status, response) in responses.iter_mut() {
            if status.starts_with('2') {
                response["links"][name] = link.clone();
            }
        }
    }
}
