//! What the ledger's own passes share (the expiry pass, the backorder
//! pass): their commands run each on its own, so one bad reservation (a
//! damaged stream, a bug) or one held lock costs only itself.

use crate::domain::{Command, CommandContext, Outcome, Rejection};
use crate::store::{Store, StoreError};

/// Runs `batch` through `Store::execute_each` and answers each command;
/// one the store could not run is logged (`what` says what it was meant
/// to do) and left out. When every one failed for a reason worth a retry,
/// the pass failed: the error is returned, and the next pass tries again.
pub(crate) async fn run_each(
    store: &Store,
    batch: &[(Command, CommandContext)],
    what: &str,
) -> Result<Vec<Result<Outcome, Rejection>>, StoreError> {
    let answers = store.execute_each(batch).await;
    let all_retryable = answers
        .iter()
        .all(|a| a.as_ref().is_err_and(StoreError::is_retryable));
    if let (true, Some(Err(e))) = (all_retryable, answers.first()) {
        return Err(e.clone());
    }
    let mut results = Vec::with_capacity(answers.len());
    for (answer, command) in answers.into_iter().zip(batch) {
        match answer {
            Ok(one) => results.push(one.result),
            Err(e) => tracing::error!(
                error = %e,
                stream = %command.0.stream(),
                "cannot {what} this reservation"
            ),
        }
    }
    Ok(results)
}
