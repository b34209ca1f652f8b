//! The group roles of schemas 0010 and 0013 (docs/auditing.md, "Roles"): the owner
//! of every table, which migrations and rebuilds act as; the service,
//! which may append to the log and read it but never change it; and the key
//! administrators, who alone mint and revoke API keys.

use tokio_postgres::GenericClient;

use crate::store::StoreError;

/// Owns every table; migrations from `FIRST_OWNED_MIGRATION` on, the
/// projections' live tables and rebuilt copies are created as it.
pub const OWNER_ROLE: &str = "stockledger_owner";

/// What the server and the workers connect as, through a login member.
pub const SERVICE_ROLE: &str = "stockledger_service";

/// Mints and revokes API keys (schema 0013); the service only reads them.
pub const KEYS_ADMIN_ROLE: &str = "stockledger_keys_admin";

/// The first migration that runs as the owner. The ones before it run as
/// whoever migrates: 0010 creates the roles and hands the tables over.
pub const FIRST_OWNED_MIGRATION: i32 = 11;

/// Inside a transaction: acts as the owner for the rest of it, when this
/// database's schema has been handed to the owner (it owns `events`: roles
/// are server-wide, so the role may exist long before migration 0010 ran
/// here) and this session's user is a member (a superuser is). Returns
/// whether it does; a session that cannot goes on as itself, and a
/// statement it may not run fails with PostgreSQL's own `permission denied`.
pub async fn act_as_owner(tx: &impl GenericClient) -> Result<bool, StoreError> {
    let may: bool = tx
        .query_one(
            "SELECT CASE WHEN EXISTS (
                     SELECT 1 FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner
                     WHERE c.oid = to_regclass('public.events') AND r.rolname = $1)
                 THEN pg_has_role(current_user, $1, 'MEMBER') ELSE false END",
            &[&OWNER_ROLE],
        )
        .await?
        .get(0);
    if may {
        tx.batch_execute(&format!("SET LOCAL ROLE {OWNER_ROLE}"))
            .await?;
    }
    Ok(may)
}

/// Creates the login role `login`, a member of the service role, if it does
/// not exist (the private cluster's and the tests' service connection; trust
/// authentication there, so it has no password). `login` is one of our
/// constants, never user input, and is quoted as an identifier anyway.
pub async fn ensure_service_login(
    admin: &impl GenericClient,
    login: &str,
) -> Result<(), StoreError> {
    let quoted = format!("\"{}\"", login.replace('"', "\"\""));
    // Concurrent first runs race to create it; the loser's error is what we
    // wanted anyway.
    let sql = format!(
        "DO $$ BEGIN
             IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{}') THEN
                 CREATE ROLE {quoted} LOGIN IN ROLE {SERVICE_ROLE};
             END IF;
         EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
         END $$",
        login.replace('\'', "''")
    );
    admin.batch_execute(&sql).await?;
    Ok(())
}
