//! Benchmark support: realistic logs made through the real command path, so
//! every generated history is one the product could have produced (and the
//! audit proves it).

pub mod baselines;
pub mod fill;
pub mod load;
pub mod rng;
pub mod svg;
