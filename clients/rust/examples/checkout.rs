//! An order service's two moments, with the client: at checkout it
//! reserves the basket (all lines or none) and keeps the reservation id with
//! the order; when the payment comes back it confirms the reservation, or
//! releases it if the payment failed. Ids are made once per order and sent
//! again on every retry, so a crash between "sent" and "answered" is mended
//! by sending the same call again.
//!
//! ```sh
//! stockledger serve --dev &                                  # or with a writer key
//! cargo run -p stockledger-client --example checkout -- http://127.0.0.1:8080 [KEY]
//! ```

use std::time::Duration;

use stockledger_client::{
    new_id, Client, Error, LineRequest, ReceiveRequest, RejectionCode, ReservationState,
    ReserveRequest,
};

/// An order as the order service keeps it: the reservation id is made once,
/// at checkout, and stored with the order before the ledger is called.
struct Order {
    order_id: String,
    reservation_id: String,
    basket: Vec<(&'static str, i64)>,
}

/// Checkout: hold the whole basket for 15 minutes, or tell the buyer what
/// is short.
async fn checkout(ledger: &Client, order: &Order) -> Result<bool, Error> {
    let request = ReserveRequest {
        reservation_id: order.reservation_id.clone(),
        order_id: order.order_id.clone(),
        lines: order
            .basket
            .iter()
            .map(|(sku, quantity)| LineRequest {
                sku: (*sku).into(),
                location: None,
                quantity: *quantity,
            })
            .collect(),
        ttl_seconds: Some(900),
        backorder: false,
        latest_arrival: None,
    };
    match ledger.reserve(&request).await {
        Ok(held) => {
            println!(
                "{}: held until {}",
                order.order_id,
                held.expires_at.map(|t| t.to_rfc3339()).unwrap_or_default()
            );
            Ok(true)
        }
        Err(e) if e.rejection() == Some(RejectionCode::InsufficientStock) => {
            println!("{}: not enough stock: {e}", order.order_id);
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// The payment's answer: confirm (the units are sold) or release (they go
/// back on sale). Both are safe to repeat, and a confirm racing an expiry
/// is answered with the ledger's code, not guessed at.
async fn payment(ledger: &Client, order: &Order, paid: bool) -> Result<(), Error> {
    let result = if paid {
        ledger.confirm(&order.reservation_id).await
    } else {
        ledger
            .release(&order.reservation_id, Some("payment failed"))
            .await
    };
    match result {
        Ok(r) => println!("{}: {:?}", order.order_id, r.state),
        Err(e) if e.rejection() == Some(RejectionCode::ReservationExpired) => {
            println!(
                "{}: the hold expired before the payment came",
                order.order_id
            )
        }
        Err(e) => return Err(e),
    }
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let base = args
        .next()
        .unwrap_or_else(|| "http://127.0.0.1:8080".into());
    let key = args.next();
    // Each call gives up after five seconds: the order service's own
    // request to its caller must not wait longer.
    let ledger = Client::new(&base, key.as_deref())?.with_deadline(Duration::from_secs(5));

    let delivery = new_id("delivery");
    for sku in ["example-sneaker", "example-sock"] {
        ledger
            .receive(&ReceiveRequest {
                receipt_id: format!("{delivery}-{sku}"),
                sku: sku.into(),
                location: None,
                quantity: 3,
                against: None,
            })
            .await?;
    }
    let orders: Vec<Order> = [
        vec![("example-sneaker", 2), ("example-sock", 2)],
        vec![("example-sneaker", 1)],
        vec![("example-sneaker", 1), ("example-sock", 1)],
    ]
    .into_iter()
    .map(|basket| Order {
        order_id: new_id("order"),
        reservation_id: new_id("r"),
        basket,
    })
    .collect();
    for (n, order) in orders.iter().enumerate() {
        if checkout(&ledger, order).await? {
            // Every second payment fails, for the example's sake.
            payment(&ledger, order, n % 2 == 0).await?;
        }
    }
    let first = ledger.reservation(&orders[0].reservation_id).await?;
    assert_eq!(first.state, ReservationState::Confirmed);
    Ok(())
}
