//! Fault injection: the proxy the fault tests and `stockledger chaos` put
//! between the service and PostgreSQL. The chaos run itself is the binary's
//! (`src/chaos_run.rs`): nothing but the command line runs it.

pub mod proxy;
