//! Joining concurrent work inside a task, with one rule for errors: every
//! future or task runs to completion (a command already sent to a device is
//! never abandoned half-way), and the result is the first error in the order
//! the work was given, else every output in that order. Futures are polled
//! together in the caller's task, in their given order at every wake-up, so
//! the commands they submit at one instant keep that order.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

use crate::runtime::JoinHandle;

/// A boxed future of the caller's task (no `Send`: the runtime is one thread).
pub type LocalFuture<'a, O> = Pin<Box<dyn Future<Output = O> + 'a>>;

/// Polls the tagged futures together until all are done, handing each one's
/// tag and output to `done` as it finishes.
pub async fn poll_all<'a, T, O>(
    mut futs: Vec<(T, LocalFuture<'a, O>)>,
    mut done: impl FnMut(&T, O),
) {
    std::future::poll_fn(|cx| {
        futs.retain_mut(|(tag, f)| match f.as_mut().poll(cx) {
            Poll::Pending => true,
            Poll::Ready(out) => {
                done(tag, out);
                false
            }
        });
        if futs.is_empty() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await
}

/// Runs `futs` to completion together; their outputs in the given order, or
/// the first error in that order.
pub async fn try_join_all<'a, V, E>(futs: Vec<LocalFuture<'a, Result<V, E>>>) -> Result<Vec<V>, E> {
    let n = futs.len();
    let mut results: Vec<Option<Result<V, E>>> = (0..n).map(|_| None).collect();
    poll_all(futs.into_iter().enumerate().collect(), |&i, r| {
        results[i] = Some(r);
    })
    .await;
    results.into_iter().flatten().collect()
}

/// Waits for every task; the first error in the given order, if any.
pub async fn try_join_tasks<E>(tasks: Vec<JoinHandle<Result<(), E>>>) -> Result<(), E> {
    let mut res = Ok(());
    for t in tasks {
        let r = t.await;
        if res.is_ok() {
            res = r;
        }
    }
    res
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Runtime;

    #[test]
    fn everything_completes_and_the_first_error_in_order_wins() {
        let mut rt = Runtime::new(1);
        let h = rt.handle();
        let done = std::rc::Rc::new(std::cell::Cell::new(0));
        let futs: Vec<LocalFuture<'_, Result<u32, &str>>> = (0..4u32)
            .map(|i| {
                let (h, done) = (h.clone(), done.clone());
                Box::pin(async move {
                    // later futures finish first
                    h.sleep(u64::from(10 - i)).await;
                    done.set(done.get() + 1);
                    match i {
                        1 => Err("one"),
                        3 => Err("three"),
                        _ => Ok(i),
                    }
                }) as LocalFuture<'_, _>
            })
            .collect();
        assert_eq!(rt.block_on(try_join_all(futs)), Err("one"));
        assert_eq!(done.get(), 4, "every future ran to its end");
        let ok: Vec<LocalFuture<'_, Result<u32, &str>>> = (0..3u32)
            .map(|i| Box::pin(async move { Ok(i) }) as LocalFuture<'_, _>)
            .collect();
        assert_eq!(rt.block_on(try_join_all(ok)), Ok(vec![0, 1, 2]));
        let tasks: Vec<JoinHandle<Result<(), u32>>> = (0..3u32)
            .map(|i| {
                h.spawn(async move {
                    if i == 0 {
                        Ok(())
                    } else {
                        Err(i)
                    }
                })
            })
            .collect();
        assert_eq!(rt.block_on(try_join_tasks(tasks)), Err(1));
    }
}
