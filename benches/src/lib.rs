//! stockledger's benchmark support, outside the product: realistic logs made
//! through the real command path (so every generated history is one the
//! product could have produced, and the audit proves it), a closed-loop load
//! generator, the usual designs to compare with, and SVG charts. The
//! `stockledger-bench` binary runs the benchmarks themselves.

#![warn(clippy::too_many_lines)]

pub mod baselines;
pub mod fill;
pub mod load;
pub mod preorder;
pub mod svg;
