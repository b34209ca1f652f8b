//! Every route of the contract, named once: its handler, and the
//! description `#[utoipa::path]` made of it, which says the route's method
//! and path. The router (`routes.rs`) and the API description (`openapi`)
//! are both built from this table, so no route is served undocumented or
//! documented unserved, and no path is spelled twice.
//!
//! Each macro hands its routes to the macro it is given, as `handler,
//! description;` pairs.

/// The routes that take an API key.
macro_rules! keyed_routes {
    ($then:ident) => {
        $then! {
            crate::server::commands::receive, crate::server::commands::__path_receive;
            crate::server::commands::adjust, crate::server::commands::__path_adjust;
            crate::server::commands::transfer, crate::server::commands::__path_transfer;
            crate::server::commands::count, crate::server::commands::__path_count;
            crate::server::commands::limit, crate::server::commands::__path_limit;
            crate::server::commands::reorder_point, crate::server::commands::__path_reorder_point;
            crate::server::commands::reserve, crate::server::commands::__path_reserve;
            crate::server::commands::confirm, crate::server::commands::__path_confirm;
            crate::server::commands::release, crate::server::commands::__path_release;
            crate::server::commands::confirm_lines, crate::server::commands::__path_confirm_lines;
            crate::server::commands::release_lines, crate::server::commands::__path_release_lines;
            crate::server::commands::extend, crate::server::commands::__path_extend;
            crate::server::expected::expect, crate::server::expected::__path_expect;
            crate::server::expected::change, crate::server::expected::__path_change;
            crate::server::expected::cancel, crate::server::expected::__path_cancel;
            crate::server::reads::reservation, crate::server::reads::__path_reservation;
            crate::server::reads::stock, crate::server::reads::__path_stock;
            crate::server::expected::promise, crate::server::expected::__path_promise;
            crate::server::expected::expected_receipt, crate::server::expected::__path_expected_receipt;
            crate::server::reads::low_stock, crate::server::reads::__path_low_stock;
            crate::server::reads::order, crate::server::reads::__path_order;
            crate::server::reads::events, crate::server::reads::__path_events;
            crate::server::stream::events_stream, crate::server::stream::__path_events_stream;
            crate::server::reads::projections, crate::server::reads::__path_projections;
            crate::server::reads::digest, crate::server::reads::__path_digest;
            crate::server::overview::me, crate::server::overview::__path_me;
            crate::server::overview::expiring, crate::server::overview::__path_expiring;
            crate::server::overview::relays, crate::server::overview::__path_relays;
            crate::server::overview::events_head, crate::server::overview::__path_events_head;
        }
    };
}

/// The operational routes: no key, a request budget per client address.
macro_rules! open_routes {
    ($then:ident) => {
        $then! {
            crate::server::ops::healthz, crate::server::ops::__path_healthz;
            crate::server::ops::readyz, crate::server::ops::__path_readyz;
            crate::server::ops::metrics, crate::server::ops::__path_metrics;
            crate::server::ops::openapi, crate::server::ops::__path_openapi;
        }
    };
}

pub(crate) use {keyed_routes, open_routes};
