//! Benchmark support: realistic logs made through the real command path, so
//! every generated history is one the product could have produced (and the
//! audit proves it).

pub mod fill;
pub mod rng;
