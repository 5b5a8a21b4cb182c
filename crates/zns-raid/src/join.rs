//! The array's joins are zns_sim's (`zns_sim::join`: every sub-I/O and task
//! runs to completion, the first error in the order given wins); this names
//! the sub-I/O future and the one join that drops the outputs.

use zns_core::NvmeError;

/// A member command, or a chain of them, of one logical command.
pub(crate) type SubFuture<'a> = zns_sim::join::LocalFuture<'a, Result<(), NvmeError>>;

/// Polls `futs` together until all are done; the first error, if any.
pub(crate) async fn join_in_place(futs: Vec<SubFuture<'_>>) -> Result<(), NvmeError> {
    zns_sim::join::try_join_all(futs).await.map(|_| ())
}
