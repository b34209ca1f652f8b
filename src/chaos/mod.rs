//! Fault injection: the proxy the fault tests and `stockledger chaos` put
//! between the service and PostgreSQL.

pub mod proxy;
