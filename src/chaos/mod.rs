//! Fault injection: the proxy the fault tests and `stockledger chaos` put
//! between the service and PostgreSQL, and the chaos run itself.

pub mod proxy;
pub mod run;
