//! A reservation's state, folded from its stream. The fold is strict: a stream
//! that breaks the rules (a gap in sequence numbers, a transition the outcome
//! table does not allow, a step that takes more than is open, a settling event
//! whose lines are not what was open) is reported, not guessed at. The command
//! path and the audit share it.

use crate::domain::event::{
    BackorderDropped, BackorderFilled, BackorderPlaced, ReservationConfirmed, ReservationCreated,
    ReservationExpired, ReservationExtended, ReservationLinesConfirmed, ReservationLinesReleased,
    ReservationReleased,
};
use chrono::{DateTime, Duration, Utc};

use uuid::Uuid;

use crate::domain::event::outside_reservations;
use crate::domain::event::{DropReason, Event};
use crate::domain::ids::Line;
use crate::domain::ids::{ConfirmationId, ExtensionId, Item, OrderId, ReleaseId, ReservationId};
use crate::domain::stream::StreamKind;
use crate::limits::{MAX_RESERVATION_EVENTS, MAX_TTL_SECONDS};

pub use crate::domain::event_type::ReservationState;

/// A reservation stream, folded. A tombstone is its own variant: it has no
/// order, no lines and no expiry, and the compiler makes every reader say what
/// it does with one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reservation {
    /// A release that arrived before its reserve (seq 1 of the stream): a late
    /// reserve of the same id is refused instead of holding stock for a dead order.
    Tombstone(Tombstone),
    /// A reservation made by a reserve, open or settled.
    Placed(Placed),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tombstone {
    pub reservation_id: ReservationId,
    pub recorded_at: DateTime<Utc>,
    pub command_id: Uuid,
}

impl Tombstone {
    /// The event a tombstone is: a release with no order and no lines, at
    /// seq 1, for a cancel that overtook its reserve.
    pub fn event() -> Event {
        Event::ReservationReleased(ReservationReleased {
            order_id: None,
            lines: Vec::new(),
            reason: crate::domain::event::TOMBSTONE_REASON.to_owned(),
            release_id: None,
        })
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placed {
    pub reservation_id: ReservationId,
    pub order_id: OrderId,
    pub state: ReservationState,
    /// The lines as ordered: held at seq 1, and waiting from seq 2 (a
    /// backorder), merged per item and sorted.
    pub lines: Vec<Line>,
    /// What has become of each line, index for index with `lines`.
    pub progress: Vec<LineProgress>,
    /// The units placed to wait for stock (seq 2), as placed.
    pub backordered: Vec<Line>,
    /// Set by a drop of every waiting unit for a release or an expiry: the
    /// settlement it comes before must follow at once.
    pub settling: Option<DropReason>,
    pub expires_at: DateTime<Utc>,
    /// The expiry the reserve set, before any extension.
    pub first_expires_at: DateTime<Utc>,
    pub request_hash: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// The command id of the event at each sequence number (index = seq - 1).
    pub step_commands: Vec<Uuid>,
    /// The partial confirmations and releases and the extensions taken, by
    /// the ids their callers chose: what a retry is recognised by.
    pub steps: Vec<TakenStep>,
}

/// The units of one ordered line that were confirmed, released and
/// expired, that still wait for stock, and that waited and were dropped;
/// the rest is held (`open`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LineProgress {
    pub confirmed: u32,
    pub released: u32,
    pub expired: u32,
    pub waiting: u32,
    pub dropped: u32,
}

impl LineProgress {
    /// The units of a line of `quantity` still held.
    pub fn open(&self, quantity: u32) -> u32 {
        quantity - self.confirmed - self.released - self.expired - self.waiting - self.dropped
    }
}

/// A caller's id for one step of a reservation. Each kind has its own ids.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepKey {
    Confirmation(ConfirmationId),
    Release(ReleaseId),
    Extension(ExtensionId),
}

/// One step taken, as a retry must match it: the lines of a partial
/// confirmation or release, the time to live of an extension.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TakenStep {
    pub key: StepKey,
    pub seq: u32,
    pub request: StepRequest,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepRequest {
    Lines(Vec<Line>),
    Ttl(u32),
}

/// The events the commands on a placed reservation write about it, built
/// here beside the fold that reads them back.
impl Placed {
    /// Releases `lines` (what is open, or nothing when only waiting units
    /// were left) and settles the reservation: the whole of what is open
    /// when `release_id` is `None`, else the rest of a partial release.
    pub fn released(
        &self,
        lines: Vec<Line>,
        reason: String,
        release_id: Option<ReleaseId>,
    ) -> Event {
        Event::ReservationReleased(ReservationReleased {
            order_id: Some(self.order_id.clone()),
            lines,
            reason,
            release_id,
        })
    }

    /// Confirms `lines` (what is open, with any units just filled) and
    /// settles the reservation; `confirmation_id` when a partial confirm
    /// took the rest.
    pub fn confirmed(&self, lines: Vec<Line>, confirmation_id: Option<ConfirmationId>) -> Event {
        Event::ReservationConfirmed(ReservationConfirmed {
            order_id: self.order_id.clone(),
            lines,
            confirmation_id,
        })
    }

    /// Waiting units now held, filled from stock.
    pub fn filled(&self, lines: Vec<Line>) -> Event {
        Event::BackorderFilled(BackorderFilled {
            order_id: self.order_id.clone(),
            lines,
        })
    }

    /// Waiting units that no longer wait, for `reason`.
    pub fn dropped(&self, lines: Vec<Line>, reason: DropReason) -> Event {
        Event::BackorderDropped(BackorderDropped {
            order_id: self.order_id.clone(),
            lines,
            reason,
        })
    }
}

impl Placed {
    /// The units of `item` still held.
    pub fn open_of(&self, item: &Item) -> u32 {
        self.lines
            .iter()
            .zip(&self.progress)
            .find(|(l, _)| l.item == *item)
            .map_or(0, |(l, p)| p.open(l.quantity))
    }

    /// The units of `item` still waiting for stock.
    pub fn waiting_of(&self, item: &Item) -> u32 {
        self.lines
            .iter()
            .zip(&self.progress)
            .find(|(l, _)| l.item == *item)
            .map_or(0, |(_, p)| p.waiting)
    }

    /// The lines with units still waiting, and how many of each.
    pub fn waiting_lines(&self) -> Vec<Line> {
        self.lines
            .iter()
            .zip(&self.progress)
            .filter(|(_, p)| p.waiting > 0)
            .map(|(l, p)| Line {
                item: l.item.clone(),
                quantity: p.waiting,
            })
            .collect()
    }

    /// Every unit still waiting, over all lines.
    pub fn waiting(&self) -> u64 {
        self.progress.iter().map(|p| u64::from(p.waiting)).sum()
    }

    /// The lines still held, with what is left of each (fully settled lines left out).
    pub fn open_lines(&self) -> Vec<Line> {
        self.lines
            .iter()
            .zip(&self.progress)
            .filter_map(|(l, p)| {
                let open = p.open(l.quantity);
                (open > 0).then(|| Line {
                    item: l.item.clone(),
                    quantity: open,
                })
            })
            .collect()
    }

    /// Whether `lines` are exactly the lines still held, with what is left
    /// of each (`open_lines`, compared without building it: the audit
    /// checks every settlement so).
    pub fn is_open(&self, lines: &[Line]) -> bool {
        let mut open = self
            .lines
            .iter()
            .zip(&self.progress)
            .map(|(l, p)| (&l.item, p.open(l.quantity)))
            .filter(|(_, q)| *q > 0);
        let mut given = lines.iter();
        loop {
            match (open.next(), given.next()) {
                (None, None) => return true,
                (Some((item, q)), Some(l)) if *item == l.item && q == l.quantity => {}
                _ => return false,
            }
        }
    }

    /// The step taken under `key`, if any.
    pub fn step(&self, key: &StepKey) -> Option<&TakenStep> {
        self.steps.iter().find(|s| s.key == *key)
    }
}

/// Why a reservation stream is not a valid history.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StreamViolation {
    #[error("expected seq {expected}, found {found}")]
    SequenceGap { expected: u32, found: u32 },
    #[error("{event} is not allowed after {after}")]
    BadTransition { after: String, event: &'static str },
    #[error("{event} at seq {seq} does not name the order, or its lines are not what was open")]
    AmountsDiffer { seq: u32, event: &'static str },
    #[error("{event} at seq {seq} reuses the id of an earlier step")]
    StepReused { seq: u32, event: &'static str },
    #[error(
        "{event} at seq {seq} does not move the expiry later, to its time to live after \
         it, within the longest hold, before the hold ran out"
    )]
    BadExtension { seq: u32, event: &'static str },
    #[error("{event} at seq {seq} was recorded after the reservation expired")]
    AfterExpiry { seq: u32, event: &'static str },
    #[error("a {event} event does not belong in a reservation stream")]
    ForeignEvent { event: &'static str },
    #[error(
        "{event} at seq {seq} leaves units waiting without the two places a drop and a \
         settlement need"
    )]
    NoRoom { seq: u32, event: &'static str },
}

impl Reservation {
    pub fn reservation_id(&self) -> &ReservationId {
        match self {
            Reservation::Tombstone(t) => &t.reservation_id,
            Reservation::Placed(p) => &p.reservation_id,
        }
    }

    /// A tombstone reads as released: that is what its one event says.
    pub fn state(&self) -> ReservationState {
        match self {
            Reservation::Tombstone(_) => ReservationState::Released,
            Reservation::Placed(p) => p.state,
        }
    }

    pub fn order_id(&self) -> Option<&OrderId> {
        self.placed().map(|p| &p.order_id)
    }

    pub fn lines(&self) -> &[Line] {
        self.placed().map_or(&[], |p| &p.lines)
    }

    pub fn expires_at(&self) -> Option<DateTime<Utc>> {
        self.placed().map(|p| p.expires_at)
    }

    pub fn created_at(&self) -> DateTime<Utc> {
        match self {
            Reservation::Tombstone(t) => t.recorded_at,
            Reservation::Placed(p) => p.created_at,
        }
    }

    pub fn updated_at(&self) -> DateTime<Utc> {
        match self {
            Reservation::Tombstone(t) => t.recorded_at,
            Reservation::Placed(p) => p.updated_at,
        }
    }

    pub fn placed(&self) -> Option<&Placed> {
        match self {
            Reservation::Tombstone(_) => None,
            Reservation::Placed(p) => Some(p),
        }
    }

    /// The last sequence number in the stream.
    pub fn seq(&self) -> u32 {
        match self {
            Reservation::Tombstone(_) => 1,
            Reservation::Placed(p) => p.step_commands.len() as u32,
        }
    }

    /// The command that wrote the event at `seq`, if the stream reaches it.
    pub fn command_at(&self, seq: u32) -> Option<Uuid> {
        match self {
            Reservation::Tombstone(t) => (seq == 1).then_some(t.command_id),
            Reservation::Placed(p) => p.step_commands.get((seq as usize).checked_sub(1)?).copied(),
        }
    }

    /// Whether the reservation is open and past its expiry at `now` (the database clock).
    pub fn is_due(&self, now: DateTime<Utc>) -> bool {
        self.placed()
            .is_some_and(|p| p.state == ReservationState::Reserved && now >= p.expires_at)
    }

    /// Folds one more event into the reservation (`None` before seq 1).
    pub fn fold(
        current: Option<Reservation>,
        reservation_id: &ReservationId,
        seq: u32,
        event: &Event,
        command_id: Uuid,
        recorded_at: DateTime<Utc>,
    ) -> Result<Reservation, StreamViolation> {
        let expected = current.as_ref().map_or(1, |r| r.seq() + 1);
        if seq != expected {
            return Err(StreamViolation::SequenceGap {
                expected,
                found: seq,
            });
        }
        let step = Step {
            reservation_id,
            event,
            seq,
            command_id,
            recorded_at,
        };
        // The coarse rule of the stream kind first (`StreamKind::allows`),
        // then what depends on the state before.
        let t = event.event_type();
        if StreamKind::of_event(t) != StreamKind::Reservation {
            return Err(step.foreign());
        }
        if !StreamKind::Reservation.allows(seq, t) {
            let after = current.as_ref().map_or("nothing", |r| r.state().as_str());
            return Err(step.not_after(after));
        }
        match current {
            None => step.open(),
            Some(Reservation::Placed(p)) if p.state == ReservationState::Reserved => {
                step.advance(p).map(Reservation::Placed)
            }
            Some(r @ (Reservation::Tombstone(_) | Reservation::Placed(_))) => {
                Err(step.not_after(r.state().as_str()))
            }
        }
    }
}

/// One event being folded, with where it stands.
struct Step<'a> {
    reservation_id: &'a ReservationId,
    event: &'a Event,
    seq: u32,
    command_id: Uuid,
    recorded_at: DateTime<Utc>,
}

/// What an event after seq 1 does to an open reservation.
enum Move<'a> {
    /// Settles every open unit: the state it leaves, the lines it settles,
    /// and the caller's step id when a partial command took the rest.
    Settle(Settled, &'a [Line], Option<StepKey>),
    /// Settles part of what is open.
    Part(Settled, &'a [Line], StepKey),
    Extend(&'a ExtensionId, u32, DateTime<Utc>),
    /// Units that wait for stock (seq 2 only).
    Wait(&'a [Line]),
    /// Waiting units filled: held from now on.
    Fill(&'a [Line]),
    /// Waiting units dropped, and why.
    Drop(&'a [Line], DropReason),
}

/// How units leave a reservation.
#[derive(Clone, Copy)]
enum Settled {
    Confirmed,
    Released,
    Expired,
}

impl Settled {
    /// The state a reservation is left in when its last open units leave so.
    fn state(self) -> ReservationState {
        match self {
            Settled::Confirmed => ReservationState::Confirmed,
            Settled::Released => ReservationState::Released,
            Settled::Expired => ReservationState::Expired,
        }
    }
}

impl Step<'_> {
    /// Seq 1: a reservation made, or a tombstone.
    fn open(&self) -> Result<Reservation, StreamViolation> {
        match self.event {
            Event::ReservationCreated(ReservationCreated {
                order_id,
                lines,
                expires_at,
                request_hash,
                ..
            }) => Ok(Reservation::Placed(Placed {
                reservation_id: self.reservation_id.clone(),
                order_id: order_id.clone(),
                state: ReservationState::Reserved,
                lines: lines.clone(),
                progress: vec![LineProgress::default(); lines.len()],
                backordered: Vec::new(),
                settling: None,
                expires_at: *expires_at,
                first_expires_at: *expires_at,
                request_hash: request_hash.clone(),
                created_at: self.recorded_at,
                updated_at: self.recorded_at,
                step_commands: vec![self.command_id],
                steps: Vec::new(),
            })),
            Event::ReservationReleased(ReservationReleased {
                order_id: None,
                lines,
                release_id: None,
                ..
            }) if lines.is_empty() => Ok(Reservation::Tombstone(Tombstone {
                reservation_id: self.reservation_id.clone(),
                recorded_at: self.recorded_at,
                command_id: self.command_id,
            })),
            Event::ReservationReleased(_)
            | Event::ReservationConfirmed(_)
            | Event::ReservationExpired(_)
            | Event::ReservationLinesConfirmed(_)
            | Event::ReservationLinesReleased(_)
            | Event::ReservationExtended(_)
            | Event::BackorderPlaced(_)
            | Event::BackorderFilled(_)
            | Event::BackorderDropped(_) => Err(self.not_after("nothing")),
            outside_reservations!() => Err(self.foreign()),
        }
    }

    /// What the event does, if it names the reservation's order.
    fn movement<'e>(&'e self, p: &Placed) -> Result<Move<'e>, StreamViolation> {
        use Settled as S;
        let (order_id, m) = match self.event {
            Event::ReservationConfirmed(ReservationConfirmed {
                order_id,
                lines,
                confirmation_id,
            }) => {
                let key = confirmation_id.clone().map(StepKey::Confirmation);
                (Some(order_id), Move::Settle(S::Confirmed, lines, key))
            }
            Event::ReservationReleased(ReservationReleased {
                order_id,
                lines,
                release_id,
                ..
            }) => {
                let key = release_id.clone().map(StepKey::Release);
                (order_id.as_ref(), Move::Settle(S::Released, lines, key))
            }
            Event::ReservationExpired(ReservationExpired { order_id, lines }) => {
                (Some(order_id), Move::Settle(S::Expired, lines, None))
            }
            Event::ReservationLinesConfirmed(ReservationLinesConfirmed {
                order_id,
                confirmation_id,
                lines,
            }) => {
                let key = StepKey::Confirmation(confirmation_id.clone());
                (Some(order_id), Move::Part(S::Confirmed, lines, key))
            }
            Event::ReservationLinesReleased(ReservationLinesReleased {
                order_id,
                release_id,
                lines,
                ..
            }) => {
                let key = StepKey::Release(release_id.clone());
                (Some(order_id), Move::Part(S::Released, lines, key))
            }
            Event::ReservationExtended(ReservationExtended {
                order_id,
                extension_id,
                ttl_seconds,
                expires_at,
            }) => (
                Some(order_id),
                Move::Extend(extension_id, *ttl_seconds, *expires_at),
            ),
            Event::BackorderPlaced(BackorderPlaced {
                order_id, lines, ..
            }) => (Some(order_id), Move::Wait(lines)),
            Event::BackorderFilled(BackorderFilled { order_id, lines }) => {
                (Some(order_id), Move::Fill(lines))
            }
            Event::BackorderDropped(BackorderDropped {
                order_id,
                lines,
                reason,
            }) => (Some(order_id), Move::Drop(lines, *reason)),
            Event::ReservationCreated(_) => return Err(self.not_after(p.state.as_str())),
            outside_reservations!() => return Err(self.foreign()),
        };
        if order_id != Some(&p.order_id) {
            return Err(self.amounts_differ());
        }
        Ok(m)
    }

    /// An event after seq 1 of an open reservation: a partial step, an
    /// extension, a backorder's wait, fill or drop, or the event that
    /// settles what is open.
    fn advance(&self, mut p: Placed) -> Result<Placed, StreamViolation> {
        // A reservation made with nothing held is a pre-order: its seq 2
        // says what waits.
        let movement = self.movement(&p)?;
        self.follows(&p, &movement)?;
        let key = match movement {
            Move::Settle(how, lines, key) => {
                // Waiting units are filled or dropped first.
                if !p.is_open(lines) || p.waiting() > 0 {
                    return Err(self.amounts_differ());
                }
                settle_lines(&mut p, lines, how);
                p.state = how.state();
                p.settling = None;
                key.map(|k| (k, StepRequest::Lines(lines.to_vec())))
            }
            Move::Part(how, lines, key) => {
                self.part(&mut p, how, lines)?;
                Some((key, StepRequest::Lines(lines.to_vec())))
            }
            Move::Extend(id, ttl, expires_at) => {
                self.extend(&mut p, ttl, expires_at)?;
                Some((StepKey::Extension(id.clone()), StepRequest::Ttl(ttl)))
            }
            Move::Wait(lines) => {
                // Written with the reserve, by the same command.
                let with_reserve = p.step_commands.first() == Some(&self.command_id);
                if self.seq != 2 || !with_reserve || !sorted_positive(lines) {
                    return Err(self.amounts_differ());
                }
                wait_lines(&mut p, lines);
                p.backordered = lines.to_vec();
                None
            }
            Move::Fill(lines) | Move::Drop(lines, DropReason::Unfillable) => {
                // Only while the hold lasts: a due reservation is the expiry's.
                self.before_expiry(&p)?;
                let within = lines.iter().all(|l| l.quantity <= p.waiting_of(&l.item));
                if !sorted_positive(lines) || !within {
                    return Err(self.amounts_differ());
                }
                let drop = !matches!(movement, Move::Fill(_));
                unwait_lines(&mut p, lines, drop);
                None
            }
            // A release or an expiry drops every waiting unit, then settles.
            Move::Drop(lines, why @ (DropReason::Released | DropReason::Expired)) => {
                if lines.is_empty() || lines != p.waiting_lines().as_slice() {
                    return Err(self.amounts_differ());
                }
                if why == DropReason::Expired && self.recorded_at < p.expires_at {
                    return Err(self.amounts_differ());
                }
                unwait_lines(&mut p, lines, true);
                p.settling = Some(why);
                None
            }
        };
        self.leaves_room(&p)?;
        if let Some((key, request)) = key {
            if p.step(&key).is_some() {
                return Err(StreamViolation::StepReused {
                    seq: self.seq,
                    event: self.event.type_name(),
                });
            }
            p.steps.push(TakenStep {
                key,
                seq: self.seq,
                request,
            });
        }
        p.updated_at = self.recorded_at;
        p.step_commands.push(self.command_id);
        Ok(p)
    }

    /// What must come next, if anything: a pre-order (nothing held) says
    /// at seq 2 what waits, and a drop for a release or an expiry is
    /// followed by that settlement.
    fn follows(&self, p: &Placed, movement: &Move<'_>) -> Result<(), StreamViolation> {
        if p.lines.is_empty() && !matches!(movement, Move::Wait(_)) {
            return Err(self.amounts_differ());
        }
        let settles_as = match movement {
            Move::Settle(Settled::Released, ..) => Some(DropReason::Released),
            Move::Settle(Settled::Expired, ..) => Some(DropReason::Expired),
            _ => None,
        };
        if p.settling.is_some_and(|r| Some(r) != settles_as) {
            return Err(self.amounts_differ());
        }
        Ok(())
    }

    /// While units wait, two places stay free after an event: for their
    /// drop and for the settlement after it.
    fn leaves_room(&self, p: &Placed) -> Result<(), StreamViolation> {
        if p.state == ReservationState::Reserved
            && p.waiting() > 0
            && self.seq + 2 > MAX_RESERVATION_EVENTS
        {
            return Err(StreamViolation::NoRoom {
                seq: self.seq,
                event: self.event.type_name(),
            });
        }
        Ok(())
    }

    /// Refuses an event recorded once the hold ran out.
    fn before_expiry(&self, p: &Placed) -> Result<(), StreamViolation> {
        if self.recorded_at >= p.expires_at {
            return Err(StreamViolation::AfterExpiry {
                seq: self.seq,
                event: self.event.type_name(),
            });
        }
        Ok(())
    }

    /// A partial confirmation or release: part of what is held.
    fn part(&self, p: &mut Placed, how: Settled, lines: &[Line]) -> Result<(), StreamViolation> {
        // A unit can be confirmed only while it is held; a release
        // may come late (it frees what the expiry would).
        if matches!(how, Settled::Confirmed) {
            self.before_expiry(p)?;
        }
        let within =
            sorted_positive(lines) && lines.iter().all(|l| l.quantity <= p.open_of(&l.item));
        // A step that takes everything open, with nothing waiting, is
        // written as the settling event, so a partial one always leaves
        // some units open or waiting.
        let open: u64 = p.open_lines().iter().map(|l| u64::from(l.quantity)).sum();
        let taken: u64 = lines.iter().map(|l| u64::from(l.quantity)).sum();
        if lines.is_empty() || !within || taken >= open + p.waiting() {
            return Err(self.amounts_differ());
        }
        settle_lines(p, lines, how);
        Ok(())
    }

    /// An extension: the expiry moves later, within the longest hold.
    fn extend(
        &self,
        p: &mut Placed,
        ttl: u32,
        expires_at: DateTime<Utc>,
    ) -> Result<(), StreamViolation> {
        let longest = p.created_at + Duration::seconds(i64::from(MAX_TTL_SECONDS));
        let valid = expires_at > p.expires_at
            && self.recorded_at < p.expires_at
            && expires_at == self.recorded_at + Duration::seconds(i64::from(ttl))
            && expires_at <= longest;
        if !valid {
            return Err(StreamViolation::BadExtension {
                seq: self.seq,
                event: self.event.type_name(),
            });
        }
        p.expires_at = expires_at;
        Ok(())
    }

    fn amounts_differ(&self) -> StreamViolation {
        StreamViolation::AmountsDiffer {
            seq: self.seq,
            event: self.event.type_name(),
        }
    }

    fn not_after(&self, after: &str) -> StreamViolation {
        match self.event {
            outside_reservations!() => self.foreign(),
            Event::ReservationCreated(_)
            | Event::ReservationConfirmed(_)
            | Event::ReservationReleased(_)
            | Event::ReservationExpired(_)
            | Event::ReservationLinesConfirmed(_)
            | Event::ReservationLinesReleased(_)
            | Event::ReservationExtended(_)
            | Event::BackorderPlaced(_)
            | Event::BackorderFilled(_)
            | Event::BackorderDropped(_) => StreamViolation::BadTransition {
                after: after.to_owned(),
                event: self.event.type_name(),
            },
        }
    }

    fn foreign(&self) -> StreamViolation {
        StreamViolation::ForeignEvent {
            event: self.event.type_name(),
        }
    }
}

/// Whether `lines` name at least one item, each once, in order, each with
/// some units.
fn sorted_positive(lines: &[Line]) -> bool {
    !lines.is_empty()
        && lines.windows(2).all(|w| w[0].item < w[1].item)
        && lines.iter().all(|l| l.quantity > 0)
}

/// Adds waiting `lines` to the order: to the line of the same item if it
/// has one (part held, part waiting), else as a line of their own, keeping
/// the lines sorted.
fn wait_lines(p: &mut Placed, lines: &[Line]) {
    for l in lines {
        match p.lines.binary_search_by(|r| r.item.cmp(&l.item)) {
            Ok(i) => {
                p.lines[i].quantity += l.quantity;
                p.progress[i].waiting += l.quantity;
            }
            Err(i) => {
                p.lines.insert(i, l.clone());
                let waiting = LineProgress {
                    waiting: l.quantity,
                    ..Default::default()
                };
                p.progress.insert(i, waiting);
            }
        }
    }
}

/// Takes `lines` (checked to be waiting) out of the waiting units: held
/// from now on, or dropped.
fn unwait_lines(p: &mut Placed, lines: &[Line], drop: bool) {
    for l in lines {
        let Some(i) = p.lines.iter().position(|r| r.item == l.item) else {
            continue;
        };
        let progress = &mut p.progress[i];
        progress.waiting -= l.quantity;
        if drop {
            progress.dropped += l.quantity;
        }
    }
}

/// Adds `lines` (already checked to be open) to the progress of `p`.
fn settle_lines(p: &mut Placed, lines: &[Line], how: Settled) {
    for l in lines {
        let Some(i) = p.lines.iter().position(|r| r.item == l.item) else {
            continue;
        };
        let progress = &mut p.progress[i];
        match how {
            Settled::Confirmed => progress.confirmed += l.quantity,
            Settled::Released => progress.released += l.quantity,
            Settled::Expired => progress.expired += l.quantity,
        }
    }
}
