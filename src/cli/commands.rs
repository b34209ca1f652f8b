//! Turning command-line arguments into validated commands and queries, before
//! anything touches the database: bad input writes nothing and needs no server.
//! The subcommands that write are declared here too, beside their validation.

use clap::{Args as ClapArgs, Subcommand};

use stockledger::domain::{
    command, page_limit, AdjustRequest, AsOf, CancelExpected, ChangeExpectedRequest, Command,
    ConfirmLinesRequest, CountRequest, ExpectRequest, ExtendRequest, Item, LimitRequest,
    LineRequest, Location, OrderId, ReceiveRequest, Rejection, ReleaseLinesRequest,
    ReorderPointRequest, ReserveRequest, Sku, TransferRequest,
};
use stockledger::store::Cursor;

/// The subcommands that write, one per command the ledger takes from
/// callers; each is validated here, before anything touches the database.
#[derive(Subcommand, Debug)]
pub enum WriteCmd {
    /// Record a delivery of stock (--against an expected receipt, if it
    /// delivers one).
    Receive(ReceiveArgs),
    /// Record stock that is expected: --quantity units of an item due on
    /// --expected-on (a purchase order line, an advance shipping notice).
    Expect(ExpectArgs),
    /// Change an expected receipt: the units expected in all and the date.
    ChangeExpected(ChangeExpectedArgs),
    /// Cancel an expected receipt: nothing more is coming.
    CancelExpected(CancelExpectedArgs),
    /// Correct on-hand stock (count correction, damage, return to stock...).
    Adjust(AdjustArgs),
    /// Move stock of a SKU from one location to another, all at once.
    Transfer(TransferArgs),
    /// Record a stock count: the difference from the books is appended.
    Count(CountArgs),
    /// Set the most of an item one order may reserve (--max-per-order), or
    /// lift the limit (--no-limit).
    Limit(LimitArgs),
    /// Set below how many available units an item is low (--reorder-point),
    /// or remove the point (--none); crossing it is written to the log.
    ReorderPoint(ReorderPointArgs),
    /// Reserve stock for an order: every line, or none.
    Reserve(ReserveArgs),
    /// Confirm a reservation (the order was paid), or with --confirmation-id
    /// and --line only part of it (one shipment).
    Confirm(ConfirmArgs),
    /// Release a reservation (the order was cancelled), or with --release-id
    /// and --line only part of it (lines taken off the order).
    Release(ReleaseArgs),
    /// Keep a reservation's hold longer: it expires --ttl seconds from now.
    Extend(ExtendArgs),
}

impl WriteCmd {
    /// The validated command, or the first thing wrong with the arguments.
    pub fn validate(&self) -> Result<Command, Rejection> {
        match self {
            WriteCmd::Receive(a) => a.validate(),
            WriteCmd::Expect(a) => a.validate(),
            WriteCmd::ChangeExpected(a) => a.validate(),
            WriteCmd::CancelExpected(a) => CancelExpected::validate(&a.expected_id),
            WriteCmd::Adjust(a) => a.validate(),
            WriteCmd::Transfer(a) => a.validate(),
            WriteCmd::Count(a) => a.validate(),
            WriteCmd::Limit(a) => a.validate(),
            WriteCmd::ReorderPoint(a) => a.validate(),
            WriteCmd::Reserve(a) => a.validate(),
            WriteCmd::Confirm(a) => a.validate(),
            WriteCmd::Release(a) => a.validate(),
            WriteCmd::Extend(a) => a.validate(),
        }
    }
}

#[derive(ClapArgs, Debug)]
pub struct ReceiveArgs {
    #[arg(long)]
    pub receipt_id: String,
    #[arg(long)]
    pub sku: String,
    #[arg(long)]
    pub location: Option<String>,
    #[arg(long, allow_negative_numbers = true)]
    pub quantity: i64,
    /// The expected receipt this delivers (short or over); its units are no
    /// longer incoming.
    #[arg(long)]
    pub against: Option<String>,
}

#[derive(ClapArgs, Debug)]
pub struct ExpectArgs {
    #[arg(long)]
    pub expected_id: String,
    #[arg(long)]
    pub sku: String,
    #[arg(long)]
    pub location: Option<String>,
    #[arg(long, allow_negative_numbers = true)]
    pub quantity: i64,
    /// The date it is due, YYYY-MM-DD.
    #[arg(long)]
    pub expected_on: String,
}

#[derive(ClapArgs, Debug)]
pub struct ChangeExpectedArgs {
    pub expected_id: String,
    /// Chosen for this change, and sent again on a retry.
    #[arg(long)]
    pub change_id: String,
    /// The units expected in all, delivered ones included.
    #[arg(long, allow_negative_numbers = true)]
    pub quantity: i64,
    /// The date it is due, YYYY-MM-DD.
    #[arg(long)]
    pub expected_on: String,
}

#[derive(ClapArgs, Debug)]
pub struct CancelExpectedArgs {
    pub expected_id: String,
}

impl ExpectArgs {
    pub fn validate(&self) -> Result<Command, Rejection> {
        ExpectRequest {
            expected_id: self.expected_id.clone(),
            sku: self.sku.clone(),
            location: self.location.clone(),
            quantity: self.quantity,
            expected_on: self.expected_on.clone(),
        }
        .validate()
    }
}

impl ChangeExpectedArgs {
    pub fn validate(&self) -> Result<Command, Rejection> {
        ChangeExpectedRequest {
            change_id: self.change_id.clone(),
            quantity: self.quantity,
            expected_on: self.expected_on.clone(),
        }
        .validate(&self.expected_id)
    }
}

#[derive(ClapArgs, Debug)]
pub struct CountArgs {
    #[arg(long)]
    pub count_id: String,
    #[arg(long)]
    pub sku: String,
    #[arg(long)]
    pub location: Option<String>,
    /// The units found (0 or more).
    #[arg(long, allow_negative_numbers = true)]
    pub counted: i64,
}

#[derive(ClapArgs, Debug)]
#[command(group(clap::ArgGroup::new("limit").required(true).args(["max_per_order", "no_limit"])))]
pub struct LimitArgs {
    #[arg(long)]
    pub limit_id: String,
    #[arg(long)]
    pub sku: String,
    #[arg(long)]
    pub location: Option<String>,
    /// The most units one order may reserve (0 stops new reservations).
    #[arg(long, allow_negative_numbers = true)]
    pub max_per_order: Option<i64>,
    /// Lift the item's limit.
    #[arg(long)]
    pub no_limit: bool,
}

#[derive(ClapArgs, Debug)]
#[command(group(clap::ArgGroup::new("point").required(true).args(["reorder_point", "none"])))]
pub struct ReorderPointArgs {
    #[arg(long)]
    pub reorder_point_id: String,
    #[arg(long)]
    pub sku: String,
    #[arg(long)]
    pub location: Option<String>,
    /// Low while fewer units than this are available.
    #[arg(long, allow_negative_numbers = true)]
    pub reorder_point: Option<i64>,
    /// Remove the item's reorder point.
    #[arg(long)]
    pub none: bool,
}

#[derive(ClapArgs, Debug)]
pub struct TransferArgs {
    #[arg(long)]
    pub transfer_id: String,
    #[arg(long)]
    pub sku: String,
    /// The location the stock leaves.
    #[arg(long)]
    pub from: String,
    /// The location it arrives at.
    #[arg(long)]
    pub to: String,
    #[arg(long, allow_negative_numbers = true)]
    pub quantity: i64,
}

#[derive(ClapArgs, Debug)]
pub struct AdjustArgs {
    #[arg(long)]
    pub adjustment_id: String,
    #[arg(long)]
    pub sku: String,
    #[arg(long)]
    pub location: Option<String>,
    #[arg(long, allow_negative_numbers = true)]
    pub delta: i64,
    #[arg(long)]
    pub reason: String,
}

#[derive(ClapArgs, Debug)]
pub struct ReserveArgs {
    #[arg(long)]
    pub reservation_id: String,
    #[arg(long)]
    pub order_id: String,
    /// SKU[@LOCATION]:QTY; the quantity follows the last ':'. Repeatable.
    #[arg(long = "line", required = true)]
    pub lines: Vec<String>,
    /// Time to live in seconds (default 900).
    #[arg(long, allow_negative_numbers = true)]
    pub ttl: Option<i64>,
    /// Let what is not on hand wait for stock that is expected (a
    /// backorder, or a pre-order when nothing is on hand).
    #[arg(long)]
    pub backorder: bool,
    /// With --backorder: count only stock expected by this date (YYYY-MM-DD).
    #[arg(long, requires = "backorder")]
    pub latest_arrival: Option<String>,
}

#[derive(ClapArgs, Debug)]
pub struct ConfirmArgs {
    pub reservation_id: String,
    /// Confirm only the --line units, under this id (sent again on a retry).
    #[arg(long, requires = "lines")]
    pub confirmation_id: Option<String>,
    /// SKU[@LOCATION]:QTY to confirm; repeatable. Needs --confirmation-id.
    #[arg(long = "line", requires = "confirmation_id")]
    pub lines: Vec<String>,
}

#[derive(ClapArgs, Debug)]
pub struct ReleaseArgs {
    pub reservation_id: String,
    #[arg(long)]
    pub reason: Option<String>,
    /// Release only the --line units, under this id (sent again on a retry).
    #[arg(long, requires = "lines")]
    pub release_id: Option<String>,
    /// SKU[@LOCATION]:QTY to release; repeatable. Needs --release-id.
    #[arg(long = "line", requires = "release_id")]
    pub lines: Vec<String>,
}

#[derive(ClapArgs, Debug)]
pub struct ExtendArgs {
    pub reservation_id: String,
    /// Chosen for this extension, and sent again on a retry.
    #[arg(long)]
    pub extension_id: String,
    /// Seconds from now until the reservation expires.
    #[arg(long, allow_negative_numbers = true)]
    pub ttl: i64,
}

impl ReceiveArgs {
    pub fn validate(&self) -> Result<Command, Rejection> {
        ReceiveRequest {
            receipt_id: self.receipt_id.clone(),
            sku: self.sku.clone(),
            location: self.location.clone(),
            quantity: self.quantity,
            against: self.against.clone(),
        }
        .validate()
    }
}

impl AdjustArgs {
    pub fn validate(&self) -> Result<Command, Rejection> {
        AdjustRequest {
            adjustment_id: self.adjustment_id.clone(),
            sku: self.sku.clone(),
            location: self.location.clone(),
            delta: self.delta,
            reason: self.reason.clone(),
        }
        .validate()
    }
}

impl CountArgs {
    pub fn validate(&self) -> Result<Command, Rejection> {
        CountRequest {
            count_id: self.count_id.clone(),
            sku: self.sku.clone(),
            location: self.location.clone(),
            counted: self.counted,
        }
        .validate()
    }
}

impl LimitArgs {
    /// Clap has made sure exactly one of --max-per-order and --no-limit is given.
    pub fn validate(&self) -> Result<Command, Rejection> {
        LimitRequest {
            limit_id: self.limit_id.clone(),
            sku: self.sku.clone(),
            location: self.location.clone(),
            max_per_order: self.max_per_order,
        }
        .validate()
    }
}

impl ReorderPointArgs {
    /// Clap has made sure exactly one of --reorder-point and --none is given.
    pub fn validate(&self) -> Result<Command, Rejection> {
        ReorderPointRequest {
            reorder_point_id: self.reorder_point_id.clone(),
            sku: self.sku.clone(),
            location: self.location.clone(),
            reorder_point: self.reorder_point,
        }
        .validate()
    }
}

impl TransferArgs {
    pub fn validate(&self) -> Result<Command, Rejection> {
        TransferRequest {
            transfer_id: self.transfer_id.clone(),
            sku: self.sku.clone(),
            from_location: self.from.clone(),
            to_location: self.to.clone(),
            quantity: self.quantity,
        }
        .validate()
    }
}

impl ReserveArgs {
    pub fn validate(&self) -> Result<Command, Rejection> {
        ReserveRequest {
            reservation_id: self.reservation_id.clone(),
            order_id: self.order_id.clone(),
            lines: parse_lines(&self.lines)?,
            ttl_seconds: self.ttl,
            backorder: self.backorder,
            latest_arrival: self.latest_arrival.clone(),
        }
        .validate()
    }
}

impl ConfirmArgs {
    pub fn validate(&self) -> Result<Command, Rejection> {
        match &self.confirmation_id {
            None => command::confirm(&self.reservation_id),
            Some(id) => ConfirmLinesRequest {
                confirmation_id: id.clone(),
                lines: parse_lines(&self.lines)?,
            }
            .validate(&self.reservation_id),
        }
    }
}

impl ReleaseArgs {
    pub fn validate(&self) -> Result<Command, Rejection> {
        match &self.release_id {
            None => command::release(&self.reservation_id, self.reason.as_deref()),
            Some(id) => ReleaseLinesRequest {
                release_id: id.clone(),
                lines: parse_lines(&self.lines)?,
                reason: self.reason.clone(),
            }
            .validate(&self.reservation_id),
        }
    }
}

impl ExtendArgs {
    pub fn validate(&self) -> Result<Command, Rejection> {
        ExtendRequest {
            extension_id: self.extension_id.clone(),
            ttl_seconds: self.ttl,
        }
        .validate(&self.reservation_id)
    }
}

/// Every `--line`, parsed; a bad one is named by its index.
fn parse_lines(lines: &[String]) -> Result<Vec<LineRequest>, Rejection> {
    lines
        .iter()
        .enumerate()
        .map(|(i, l)| parse_line(i, l))
        .collect()
}

impl PromiseArgs {
    /// The item asked about.
    pub fn validate(&self) -> Result<Item, Rejection> {
        Ok(Item {
            sku: Sku::parse("sku", &self.sku)?,
            location: Location::parse_or_default("location", self.location.as_deref())?,
        })
    }
}

impl StockArgs {
    /// The item, and the past moment asked for, if any.
    pub fn validate(&self) -> Result<(Item, Option<AsOf>), Rejection> {
        let item = Item {
            sku: Sku::parse("sku", &self.sku)?,
            location: Location::parse_or_default("location", self.location.as_deref())?,
        };
        let as_of = AsOf::parse(self.as_of.as_deref(), self.as_of_position.as_deref())?;
        Ok((item, as_of))
    }
}

impl EventsArgs {
    /// The cursor to read after, and the page size.
    pub fn validate(&self) -> Result<(Cursor, i64), Rejection> {
        let after = match &self.after {
            Some(a) => a.parse::<Cursor>()?,
            None => Cursor::START,
        };
        Ok((after, page_limit(self.limit.as_deref())?))
    }
}

/// Whose history to show.
pub enum HistoryQuery {
    Order(OrderId),
    Item(Item),
}

impl HistoryArgs {
    pub fn validate(&self) -> Result<HistoryQuery, Rejection> {
        match (&self.order, &self.sku) {
            (Some(order), None) => Ok(HistoryQuery::Order(OrderId::parse("order", order)?)),
            (None, Some(sku)) => Ok(HistoryQuery::Item(Item {
                sku: Sku::parse("sku", sku)?,
                location: Location::parse_or_default("location", self.location.as_deref())?,
            })),
            (Some(_), Some(_)) | (None, None) => Err(Rejection::invalid(
                "history",
                "give either --order ID or --sku SKU [--location L]",
            )),
        }
    }
}

/// Parses a role name for clap, so a wrong one is a usage error before
/// anything else happens.
pub fn parse_role(name: &str) -> Result<stockledger::store::keys::Role, String> {
    stockledger::store::keys::Role::parse(name).map_err(|r| r.to_string())
}

/// Parses `SKU[@LOCATION]:QTY`. The quantity follows the last ':' because a
/// SKU may itself contain ':'; '@' cannot appear in an id, so it separates
/// the location unambiguously.
fn parse_line(index: usize, text: &str) -> Result<LineRequest, Rejection> {
    let field = format!("lines[{index}]");
    let (item, qty) = text
        .rsplit_once(':')
        .ok_or_else(|| Rejection::invalid(&field, "expected SKU[@LOCATION]:QTY"))?;
    let quantity: i64 = qty
        .parse()
        .map_err(|_| Rejection::invalid(&format!("{field}.quantity"), "must be a whole number"))?;
    let (sku, location) = match item.split_once('@') {
        Some((s, l)) => (s, Some(l.to_owned())),
        None => (item, None),
    };
    Ok(LineRequest {
        sku: sku.to_owned(),
        location,
        quantity,
    })
}

#[cfg(test)]
mod tests {
    use super::parse_line;

    #[test]
    fn lines_parse_with_the_quantity_after_the_last_colon() {
        let l = parse_line(0, "sku:with:colons@north:5").unwrap();
        assert_eq!(
            (l.sku.as_str(), l.location.as_deref(), l.quantity),
            ("sku:with:colons", Some("north"), 5)
        );
        let l = parse_line(0, "apple:2").unwrap();
        assert_eq!((l.sku.as_str(), l.location, l.quantity), ("apple", None, 2));
        assert_eq!(
            parse_line(3, "apple").unwrap_err().details()["field"],
            "lines[3]"
        );
        assert_eq!(
            parse_line(1, "apple:x").unwrap_err().details()["field"],
            "lines[1].quantity"
        );
    }
}

#[derive(clap::Args, Debug)]
pub struct PromiseArgs {
    pub sku: String,
    #[arg(long)]
    pub location: Option<String>,
}

#[derive(clap::Args, Debug)]
pub struct StockArgs {
    pub sku: String,
    #[arg(long)]
    pub location: Option<String>,
    /// A past moment (RFC 3339 time); not with --as-of-position.
    #[arg(long)]
    pub as_of: Option<String>,
    /// A past log position.
    #[arg(long, allow_hyphen_values = true)]
    pub as_of_position: Option<String>,
}

#[derive(clap::Args, Debug)]
pub struct HistoryArgs {
    #[arg(long, conflicts_with_all = ["sku", "location"])]
    pub order: Option<String>,
    #[arg(long)]
    pub sku: Option<String>,
    #[arg(long, requires = "sku")]
    pub location: Option<String>,
}

#[derive(clap::Args, Debug)]
pub struct EventsArgs {
    /// Cursor (TX:POSITION) from a previous page's `next`.
    #[arg(long)]
    pub after: Option<String>,
    /// Events in the page, from 1 to the maximum (default: the API's default).
    #[arg(long, allow_hyphen_values = true)]
    pub limit: Option<String>,
}
