//! Tamper evidence: the sealer chains every event in safe commit order and
//! seals blocks of them with a Merkle root (`sealer`); a digest of the
//! latest seal is kept outside the database (`digest`); `verify` recomputes
//! everything from the log and holds it against the seals and a digest; a
//! proof shows one event is under a digest, checked without a database
//! (`proof`). The hashes are `chain`'s, specified in docs/auditing.md.
//!
//! What this proves does not rest on the append-only triggers (a superuser
//! can switch them off) but on SHA-256 and on digests the database cannot
//! reach: a log rewritten after a digest was taken no longer hashes to it.

pub mod archive;
pub mod chain;
pub mod digest;
pub mod proof;
pub mod sealer;
pub mod verify;

pub use digest::Digest;
pub use proof::{Proof, ProofError};
pub use verify::{Finding, Report};
