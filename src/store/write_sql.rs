//! The statements of a command transaction's second half (`write.rs`):
//! their SQL, which `statements.rs` prepares before the transaction begins
//! and whose parameters `write::Writes` binds, in the order written here.

/// The batch's events in one statement. An event has any number of item
/// lines, and unnest cannot take an array of arrays of different lengths, so
/// the lines travel flat, each with the index of its event (1-based, as the
/// insert's ordinality counts), and are put back together per event.
///
/// `recorded_at` is the moment the batch was decided at; the database keeps
/// it because it lies inside the transaction's own life, and sets `tx_id`
/// itself (the `events_stamp` trigger, schema 0012). Both come back with
/// the positions, so an answer shows what was stored.
pub(crate) const APPEND: &str = "
    INSERT INTO events (stream, seq, type, data, metadata, recorded_at,
                        order_id, skus, locations, quantities, version)
    SELECT u.s, u.q, u.t, u.d, u.m, $6, u.o,
           coalesce(l.skus, '{}'), coalesce(l.locations, '{}'), coalesce(l.quantities, '{}'),
           u.v
    FROM unnest($1::text[], $2::int4[], $3::text[], $4::jsonb[], $5::jsonb[], $7::text[],
                $12::int2[])
         WITH ORDINALITY AS u(s, q, t, d, m, o, v, n)
    LEFT JOIN (
        SELECT n, array_agg(sku ORDER BY k) AS skus,
               array_agg(location ORDER BY k) AS locations,
               array_agg(quantity ORDER BY k) AS quantities
        FROM unnest($8::int4[], $9::text[], $10::text[], $11::int8[])
             WITH ORDINALITY AS x(n, sku, location, quantity, k)
        GROUP BY n
    ) AS l ON l.n = u.n
    ORDER BY u.n
    RETURNING position, recorded_at, tx_id::text::bigint";

/// Moves the balances of rows that existed (locked by the load, in
/// (location, sku) order), in place.
pub(crate) const UPDATE_BALANCES: &str = "
    UPDATE item_balances AS b
    SET on_hand = b.on_hand + u.on_hand,
        reserved = b.reserved + u.reserved,
        confirmed = b.confirmed + u.confirmed,
        backordered = b.backordered + u.backordered
    FROM unnest($1::text[], $2::text[], $3::int8[], $4::int8[], $5::int8[], $6::int8[])
         AS u(sku, location, on_hand, reserved, confirmed, backordered)
    WHERE b.sku = u.sku AND b.location = u.location";

/// Creates the rows of items seen for the first time. Only a receipt or an
/// adjustment creates a row, under its item's advisory lock (`load.rs`), so
/// no one else can be inserting the same row and the insert never waits; the
/// upsert is a backstop, not a path that runs. It cannot be one upsert for
/// all rows: PostgreSQL checks CHECK constraints on the proposed row before
/// it resolves a conflict, and a delta such as "reserved -2" is no valid row.
pub(crate) const INSERT_BALANCES: &str = "
    INSERT INTO item_balances AS b (sku, location, on_hand, reserved, confirmed, backordered)
    SELECT * FROM unnest($1::text[], $2::text[], $3::int8[], $4::int8[], $5::int8[], $6::int8[])
         AS u(sku, location, on_hand, reserved, confirmed, backordered)
    ORDER BY u.location, u.sku
    ON CONFLICT (sku, location) DO UPDATE
    SET on_hand = b.on_hand + EXCLUDED.on_hand,
        reserved = b.reserved + EXCLUDED.reserved,
        confirmed = b.confirmed + EXCLUDED.confirmed,
        backordered = b.backordered + EXCLUDED.backordered";

/// Writes the backlogs (what waits for an item, what is expected of it)
/// the batch changed, whole, as the decision left them, on rows that exist
/// by now (an expected receipt's record creates its item's row with the
/// balances). Runs after that insert.
pub(crate) const SET_BACKLOGS: &str = "
    UPDATE item_balances AS b
    SET backlog = u.backlog
    FROM unnest($1::text[], $2::text[], $3::jsonb[]) AS u(sku, location, backlog)
    WHERE b.sku = u.sku AND b.location = u.location";

/// Sets the settings the batch's events set, on rows that exist by now: a
/// setting event names its item, so its row is created with the balances
/// (`INSERT_BALANCES`) if it is new. Runs after that insert.
/// Each setting travels with a flag saying whether the batch set it, so
/// that setting one leaves the others as they were.
pub(crate) const SET_SETTINGS: &str = "
    UPDATE item_balances AS b
    SET max_per_order = CASE WHEN u.set_max THEN u.max_per_order ELSE b.max_per_order END,
        reorder_point = CASE WHEN u.set_point THEN u.reorder_point ELSE b.reorder_point END,
        alerted_low = CASE WHEN u.set_low THEN u.alerted_low ELSE b.alerted_low END
    FROM unnest($1::text[], $2::text[], $3::bool[], $4::int8[], $5::bool[], $6::int8[],
                $7::bool[], $8::bool[])
         AS u(sku, location, set_max, max_per_order, set_point, reorder_point, set_low,
              alerted_low)
    WHERE b.sku = u.sku AND b.location = u.location";
