//! Joining futures and tasks: sub-I/O futures polled together in the
//! caller's task (`poll_all`, `join_in_place`: no task each) and spawned
//! tasks awaited one after the other (`join_all`). Used by the array, its
//! engine and the zone aggregation.

use zns_core::NvmeError;
use zns_sim::JoinHandle;

pub(crate) type SubFuture<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), NvmeError>> + 'a>>;

/// Polls `futs` together until all are done; the result is the last error,
/// if any (all run to completion either way).
pub(crate) async fn join_in_place<'a>(futs: Vec<SubFuture<'a>>) -> Result<(), NvmeError> {
    let mut res = Ok(());
    poll_all(futs.into_iter().map(|f| ((), f)).collect(), |_, r| {
        if let Err(e) = r {
            res = Err(e);
        }
    })
    .await;
    res
}

/// Polls tagged futures together (in the caller's task, no task each) until
/// all are done, handing each one's tag and result to `done` as it finishes.
pub(crate) async fn poll_all<'a, T>(
    mut futs: Vec<(T, SubFuture<'a>)>,
    mut done: impl FnMut(&T, Result<(), NvmeError>),
) {
    std::future::poll_fn(|cx| {
        futs.retain_mut(|(tag, f)| match f.as_mut().poll(cx) {
            std::task::Poll::Pending => true,
            std::task::Poll::Ready(r) => {
                done(tag, r);
                false
            }
        });
        if futs.is_empty() {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await
}

/// Waits for every task; the result is the last error, if any (all tasks
/// run to completion either way).
pub(crate) async fn join_all<E>(tasks: Vec<JoinHandle<Result<(), E>>>) -> Result<(), E> {
    let mut res = Ok(());
    for t in tasks {
        if let Err(e) = t.await {
            res = Err(e);
        }
    }
    res
}
