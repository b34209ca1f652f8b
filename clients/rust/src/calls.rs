//! One typed method per route of the API (docs/openapi.json), with the
//! server's own request and answer types.

use stockledger::api::bodies::{
    AdjustmentResponse, CountResponse, DigestResponse, EventsHead, EventsPage,
    ExpectedReceiptResponse, ExpiringReservationsResponse, LimitResponse, LowStockResponse,
    MeResponse, OrderResponse, PromiseResponse, Readiness, ReceiptResponse, ReorderPointResponse,
    ReservationResponse, StockResponse, TransferResponse,
};
use stockledger::domain::{
    AdjustRequest, ChangeExpectedRequest, ConfirmLinesRequest, CountRequest, ExpectRequest,
    ExtendRequest, LimitRequest, ReceiveRequest, ReleaseLinesRequest, ReorderPointRequest,
    ReserveRequest, TransferRequest,
};

use crate::client::Client;
use crate::error::Error;

/// Commands. Each is safe to call again with the same request: the ids in
/// it make the retry get the original answer (`replayed: true`), so the
/// client retries them on `503`, `429` and broken connections by itself.
impl Client {
    /// Receives stock (`POST /v1/stock/receipts`).
    pub async fn receive(&self, r: &ReceiveRequest) -> Result<ReceiptResponse, Error> {
        self.command(&["v1", "stock", "receipts"], r).await
    }

    /// Corrects on-hand stock by a signed delta (`POST /v1/stock/adjustments`).
    pub async fn adjust(&self, r: &AdjustRequest) -> Result<AdjustmentResponse, Error> {
        self.command(&["v1", "stock", "adjustments"], r).await
    }

    /// Moves stock between locations (`POST /v1/stock/transfers`).
    pub async fn transfer(&self, r: &TransferRequest) -> Result<TransferResponse, Error> {
        self.command(&["v1", "stock", "transfers"], r).await
    }

    /// Records a stock take (`POST /v1/stock/counts`).
    pub async fn count(&self, r: &CountRequest) -> Result<CountResponse, Error> {
        self.command(&["v1", "stock", "counts"], r).await
    }

    /// Sets or lifts an item's per-order limit (`POST /v1/stock/limits`).
    pub async fn limit(&self, r: &LimitRequest) -> Result<LimitResponse, Error> {
        self.command(&["v1", "stock", "limits"], r).await
    }

    /// Sets or lifts an item's reorder point (`POST /v1/stock/reorder-points`).
    pub async fn reorder_point(
        &self,
        r: &ReorderPointRequest,
    ) -> Result<ReorderPointResponse, Error> {
        self.command(&["v1", "stock", "reorder-points"], r).await
    }

    /// Records stock on its way (`POST /v1/expected-receipts`).
    pub async fn expect(&self, r: &ExpectRequest) -> Result<ExpectedReceiptResponse, Error> {
        self.command(&["v1", "expected-receipts"], r).await
    }

    /// Changes an expected receipt's units or date.
    pub async fn change_expected(
        &self,
        expected_id: &str,
        r: &ChangeExpectedRequest,
    ) -> Result<ExpectedReceiptResponse, Error> {
        self.command(&["v1", "expected-receipts", expected_id, "changes"], r)
            .await
    }

    /// Says nothing more is coming of an expected receipt.
    pub async fn cancel_expected(
        &self,
        expected_id: &str,
    ) -> Result<ExpectedReceiptResponse, Error> {
        let body = serde_json::json!({});
        self.command(&["v1", "expected-receipts", expected_id, "cancel"], &body)
            .await
    }

    /// Reserves every line of an order, or none (`POST /v1/reservations`).
    /// A [`crate::Error::Rejected`] with `INSUFFICIENT_STOCK` names the
    /// short lines in its details.
    pub async fn reserve(&self, r: &ReserveRequest) -> Result<ReservationResponse, Error> {
        self.command(&["v1", "reservations"], r).await
    }

    /// Confirms a whole reservation: the order is paid.
    pub async fn confirm(&self, reservation_id: &str) -> Result<ReservationResponse, Error> {
        let body = serde_json::json!({});
        self.command(&["v1", "reservations", reservation_id, "confirm"], &body)
            .await
    }

    /// Confirms some units of a reservation (a partial shipment).
    pub async fn confirm_lines(
        &self,
        reservation_id: &str,
        r: &ConfirmLinesRequest,
    ) -> Result<ReservationResponse, Error> {
        self.command(&["v1", "reservations", reservation_id, "confirmations"], r)
            .await
    }

    /// Releases a whole reservation: the order is cancelled. `reason` is
    /// kept in the event (the server's default when `None`).
    pub async fn release(
        &self,
        reservation_id: &str,
        reason: Option<&str>,
    ) -> Result<ReservationResponse, Error> {
        let body = match reason {
            Some(reason) => serde_json::json!({ "reason": reason }),
            None => serde_json::json!({}),
        };
        self.command(&["v1", "reservations", reservation_id, "release"], &body)
            .await
    }

    /// Releases some units of a reservation.
    pub async fn release_lines(
        &self,
        reservation_id: &str,
        r: &ReleaseLinesRequest,
    ) -> Result<ReservationResponse, Error> {
        self.command(&["v1", "reservations", reservation_id, "releases"], r)
            .await
    }

    /// Moves a reservation's expiry later.
    pub async fn extend(
        &self,
        reservation_id: &str,
        r: &ExtendRequest,
    ) -> Result<ReservationResponse, Error> {
        self.command(&["v1", "reservations", reservation_id, "extensions"], r)
            .await
    }
}

/// Reads. Retried like commands: a read changes nothing.
impl Client {
    /// A reservation with its lines and events.
    pub async fn reservation(&self, reservation_id: &str) -> Result<ReservationResponse, Error> {
        self.read(&["v1", "reservations", reservation_id], &[])
            .await
    }

    /// An order's reservation and its timeline, from the `order_view` read model.
    pub async fn order(&self, order_id: &str) -> Result<OrderResponse, Error> {
        self.read(&["v1", "orders", order_id], &[]).await
    }

    /// An item's stock now, at `location` (the default location when `None`).
    pub async fn stock(&self, sku: &str, location: Option<&str>) -> Result<StockResponse, Error> {
        let query = location_query(location);
        self.read(&["v1", "stock", sku], &query).await
    }

    /// An item's stock as it stood just after the event at `position`.
    pub async fn stock_at_position(
        &self,
        sku: &str,
        location: Option<&str>,
        position: i64,
    ) -> Result<StockResponse, Error> {
        let mut query = location_query(location);
        query.push(("as_of_position", position.to_string()));
        self.read(&["v1", "stock", sku], &query).await
    }

    /// What can be promised of an item now and by each date stock is due.
    pub async fn promise(
        &self,
        sku: &str,
        location: Option<&str>,
    ) -> Result<PromiseResponse, Error> {
        let query = location_query(location);
        self.read(&["v1", "stock", sku, "promise"], &query).await
    }

    /// An expected receipt.
    pub async fn expected_receipt(
        &self,
        expected_id: &str,
    ) -> Result<ExpectedReceiptResponse, Error> {
        self.read(&["v1", "expected-receipts", expected_id], &[])
            .await
    }

    /// Who this client's key is: its name and role.
    pub async fn me(&self) -> Result<MeResponse, Error> {
        self.read(&["v1", "me"], &[]).await
    }

    /// The held reservations that expire soonest, soonest first.
    pub async fn expiring_reservations(&self) -> Result<ExpiringReservationsResponse, Error> {
        self.read(&["v1", "expiring-reservations"], &[]).await
    }

    /// The items below their reorder point.
    pub async fn low_stock(&self) -> Result<LowStockResponse, Error> {
        self.read(&["v1", "low-stock"], &[]).await
    }

    /// A page of the log after `after` (from the start when `None`), of
    /// one stream when `stream` is given. Read on with the page's `next`.
    pub async fn events(
        &self,
        after: Option<&str>,
        limit: Option<u32>,
        stream: Option<&str>,
    ) -> Result<EventsPage, Error> {
        let mut query = Vec::new();
        if let Some(after) = after {
            query.push(("after", after.to_owned()));
        }
        if let Some(limit) = limit {
            query.push(("limit", limit.to_string()));
        }
        if let Some(stream) = stream {
            query.push(("stream", stream.to_owned()));
        }
        self.read(&["v1", "events"], &query).await
    }

    /// Where the log ends now: pass its `cursor` to [`Client::subscribe`]
    /// to follow only what comes next (auditor and admin keys).
    pub async fn events_head(&self) -> Result<EventsHead, Error> {
        self.read(&["v1", "events", "head"], &[]).await
    }

    /// The latest seal, to keep as a digest (auditor and admin keys).
    pub async fn digest(&self) -> Result<DigestResponse, Error> {
        self.read(&["v1", "digest"], &[]).await
    }

    /// Whether the server can serve now, and its workers' states
    /// (`/readyz`; an `UNAVAILABLE` error while it cannot).
    pub async fn ready(&self) -> Result<Readiness, Error> {
        self.with_policy(crate::RetryPolicy {
            max_attempts: 1,
            ..self.policy
        })
        .read(&["readyz"], &[])
        .await
    }
}

fn location_query(location: Option<&str>) -> Vec<(&'static str, String)> {
    location
        .map(|l| vec![("location", l.to_owned())])
        .unwrap_or_default()
}
