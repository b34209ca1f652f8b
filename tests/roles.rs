//! Least privilege: the service role (every test store connects as a login
//! in it) appends to the log and reads it, and can do nothing else to it,
//! not even with its triggers switched off; the owner owns every table.

mod common;

use common::*;

/// `sql` as the service, inside a transaction that is rolled back; the
/// SQLSTATE of its error, if any.
async fn as_service(db: &TestDb, sql: &str) -> Option<String> {
    let mut client = db.store.pool().get().await.unwrap();
    let tx = client.transaction().await.unwrap();
    let result = tx.batch_execute(sql).await;
    let _ = tx.rollback().await;
    result
        .err()
        .map(|e| e.code().map_or("none".into(), |c| c.code().to_owned()))
}

#[tokio::test]
async fn the_service_may_append_and_read_the_log_but_never_change_it() {
    let db = TestDb::new().await;
    db.receive("in-1", "apple", 10).await;
    db.run(reserve("r1", "o1", &[("apple", 3)], None))
        .await
        .unwrap();
    db.project_all().await;
    stockledger::seal::sealer::catch_up(db.store.pool())
        .await
        .unwrap();
    let who: (String, bool) = {
        let client = db.store.pool().get().await.unwrap();
        let row = client
            .query_one(
                "SELECT current_user::text, rolsuper FROM pg_roles WHERE rolname = current_user",
                &[],
            )
            .await
            .unwrap();
        (row.get(0), row.get(1))
    };
    assert_eq!(who, (SERVICE_LOGIN.to_owned(), false));
    assert_eq!(
        as_service(&db, "SELECT count(*) FROM events, event_chain, seals").await,
        None
    );

    const INSUFFICIENT_PRIVILEGE: &str = "42501";
    for (table, column) in [
        ("events", "seq"),
        ("event_chain", "seq"),
        ("seals", "block"),
    ] {
        for sql in [
            format!("UPDATE {table} SET {column} = {column}"),
            format!("DELETE FROM {table}"),
            format!("TRUNCATE {table}"),
        ] {
            assert_eq!(
                as_service(&db, &sql).await.as_deref(),
                Some(INSUFFICIENT_PRIVILEGE),
                "{sql}"
            );
        }
        // Not the owner: it cannot switch the triggers off.
        let disable = format!("ALTER TABLE {table} DISABLE TRIGGER USER");
        assert_eq!(
            as_service(&db, &disable).await.as_deref(),
            Some(INSUFFICIENT_PRIVILEGE),
            "{disable}"
        );
    }
    // Nor the whole session's triggers, as a superuser can.
    assert_eq!(
        as_service(&db, "SET session_replication_role = replica")
            .await
            .as_deref(),
        Some(INSUFFICIENT_PRIVILEGE)
    );
    assert_eq!(
        as_service(&db, "DELETE FROM schema_migrations")
            .await
            .as_deref(),
        Some(INSUFFICIENT_PRIVILEGE)
    );
    assert_eq!(
        as_service(&db, "CREATE TABLE sneaky (x int)")
            .await
            .as_deref(),
        Some(INSUFFICIENT_PRIVILEGE)
    );
}

#[tokio::test]
async fn the_owner_owns_every_table_and_the_service_none() {
    let db = TestDb::new().await;
    let owners: Vec<String> = db
        .column(
            "SELECT DISTINCT pg_get_userbyid(c.relowner)::text FROM pg_class c
             JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm', 'S')",
        )
        .await;
    assert_eq!(owners, vec!["stockledger_owner".to_owned()]);
    // A rebuild (the owner's work) keeps it so, and the service can still
    // write the swapped-in copy.
    db.receive("in-1", "apple", 10).await;
    let p = stockledger::projection::by_name("stock_levels").unwrap();
    stockledger::projection::rebuild::rebuild(
        db.owner_store().pool(),
        p,
        100,
        &stockledger::audit::ReplayVerifier,
        |_| {},
    )
    .await
    .unwrap();
    let owner: Vec<String> = db
        .column(
            "SELECT pg_get_userbyid(relowner)::text FROM pg_class WHERE relname = 'stock_levels'",
        )
        .await;
    assert_eq!(owner, vec!["stockledger_owner".to_owned()]);
    db.receive("in-2", "apple", 5).await;
    db.project_all().await;
    db.assert_audit_clean().await;
}

#[tokio::test]
async fn the_service_cannot_migrate_but_opens_a_current_schema() {
    let db = TestDb::new().await;
    // Nothing pending: migrating as the service is a no-op, not an error.
    assert_eq!(db.store.migrate().await.unwrap(), Vec::<i32>::new());
    // And a rebuild as the service is refused by PostgreSQL, not done.
    let p = stockledger::projection::by_name("stock_levels").unwrap();
    let refused = stockledger::projection::rebuild::rebuild(
        db.store.pool(),
        p,
        100,
        &stockledger::audit::ReplayVerifier,
        |_| {},
    )
    .await;
    let Err(why) = refused else {
        panic!("a rebuild as the service was done")
    };
    let why = format!("{why:?}");
    assert!(
        why.contains("42501"),
        "permission denied, not another error: {why}"
    );
}

/// Issue 25, case 12: key management is a privilege of its own. The service
/// (what the server runs as) reads keys to authenticate callers and cannot
/// mint, change, un-revoke or delete one; a login in the key administrators'
/// role mints and revokes them, and a revoked key stays revoked.
#[tokio::test]
async fn only_a_key_administrator_mints_or_revokes_keys() {
    use stockledger::store::keys::Role;
    const INSUFFICIENT_PRIVILEGE: &str = "42501";
    let db = TestDb::new().await;
    let admin = db.owner_store();
    admin
        .create_key(Some("w1"), Role::Writer)
        .await
        .unwrap()
        .unwrap();
    admin.revoke_key("w1").await.unwrap().expect("revoked");
    assert_eq!(as_service(&db, "SELECT count(*) FROM api_keys").await, None);
    for sql in [
        "INSERT INTO api_keys (id, name, role, key_hash)
         VALUES (gen_random_uuid(), 'minted', 'admin', 'x')",
        "UPDATE api_keys SET revoked_at = NULL",
        "UPDATE api_keys SET role = 'admin'",
        "DELETE FROM api_keys",
        "TRUNCATE api_keys",
    ] {
        assert_eq!(
            as_service(&db, sql).await.as_deref(),
            Some(INSUFFICIENT_PRIVILEGE),
            "{sql}"
        );
    }
    assert!(
        db.store.create_key(Some("w2"), Role::Admin).await.is_err(),
        "the service minted a key"
    );
    assert!(db.store.revoke_key("w1").await.is_err());

    // A login of the key administrators.
    let login = "stockledger_test_keys";
    db.client()
        .await
        .batch_execute(&format!(
            "DO $$ BEGIN
                 IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{login}') THEN
                     CREATE ROLE {login} LOGIN IN ROLE {role};
                 END IF;
             EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
             END $$",
            role = stockledger::store::roles::KEYS_ADMIN_ROLE
        ))
        .await
        .unwrap();
    let mut config = db.config.clone();
    config.user(login);
    let keys = stockledger::store::Store::new(stockledger::store::pool::build(config, 2).unwrap());
    assert_eq!(keys.migrate().await.unwrap(), Vec::<i32>::new());
    let (r1, _) = keys
        .create_key(Some("r1"), Role::Reader)
        .await
        .unwrap()
        .unwrap();
    assert!(keys
        .revoke_key("r1")
        .await
        .unwrap()
        .unwrap()
        .revoked_at
        .is_some());
    let listed = keys.list_keys().await.unwrap();
    assert_eq!(listed.len(), 2);
    // Revoking again changes nothing; un-revoking is refused, to the key
    // administrator as to everyone, and it cannot change a key's role.
    assert!(keys.revoke_key("r1").await.unwrap().is_some());
    let client = keys.pool().get().await.unwrap();
    let unrevoke = client
        .execute(
            "UPDATE api_keys SET revoked_at = NULL WHERE id = $1",
            &[&r1.id],
        )
        .await
        .unwrap_err();
    assert_eq!(
        unrevoke.code().map(|c| c.code()),
        Some("SL003"),
        "{unrevoke}"
    );
    let promote = client
        .execute(
            "UPDATE api_keys SET role = 'admin' WHERE id = $1",
            &[&r1.id],
        )
        .await
        .unwrap_err();
    assert_eq!(
        promote.code().map(|c| c.code()),
        Some(INSUFFICIENT_PRIVILEGE),
        "{promote}"
    );
    let delete = client
        .execute("DELETE FROM api_keys WHERE id = $1", &[&r1.id])
        .await
        .unwrap_err();
    assert_eq!(
        delete.code().map(|c| c.code()),
        Some(INSUFFICIENT_PRIVILEGE)
    );
    // The service still finds live keys: the server authenticates with it.
    let (_, secret) = admin
        .create_key(Some("a1"), Role::Auditor)
        .await
        .unwrap()
        .unwrap();
    let found = db
        .store
        .find_key(&stockledger::store::keys::hash_key(&secret))
        .await
        .unwrap();
    assert_eq!(found.map(|(k, _)| k.name), Some("a1".to_owned()));
}
