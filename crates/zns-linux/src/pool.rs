//! Blocking system calls off the runtime's thread: a small pool of OS
//! threads that run the device's syscalls (O_DIRECT reads and writes, zone
//! ioctls, NVMe passthrough), and the future that hands each result back to
//! the zns-sim runtime. It also owns the page-aligned buffers O_DIRECT and
//! passthrough need.
//!
//! How it meets the runtime: a command's future submits a closure to a
//! worker and parks with the task's waker. The worker runs the syscall,
//! stores the result and wakes the waker — from another thread, which the
//! runtime's wakers support (the wake goes through its cross-thread queue).
//! While the command is in flight the closure holds a zns-sim `Remote`, so a
//! virtual-mode runtime with nothing else to do waits for the completion
//! instead of reporting a deadlock, and a paced runtime waiting on its clock
//! wakes up for it.
//!
//! Ordering: every worker has its own FIFO queue and runs one job at a time.
//! Jobs submitted with the same shard (the device uses the zone index) go to
//! the same worker, so writes to one zone reach the device in submission
//! order, as a zoned device needs; jobs without a shard are spread round
//! robin.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::collections::VecDeque;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::thread::JoinHandle;

use zns_core::{NvmeError, NvmeStatus};
use zns_sim::Remote;

type Job = Box<dyn FnOnce() + Send + 'static>;

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    closed: bool,
}

#[derive(Default)]
struct WorkerQueue {
    queue: Mutex<Queue>,
    signal: Condvar,
}

impl WorkerQueue {
    fn push(&self, job: Job) {
        let mut q = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        q.jobs.push_back(job);
        drop(q);
        self.signal.notify_one();
    }

    fn close(&self) {
        let mut q = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        q.closed = true;
        drop(q);
        self.signal.notify_all();
    }

    /// The next job, or None once the queue is closed and drained.
    fn pop(&self) -> Option<Job> {
        let mut q = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(job) = q.jobs.pop_front() {
                return Some(job);
            }
            if q.closed {
                return None;
            }
            q = self.signal.wait(q).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// The worker threads of one device.
pub(crate) struct Pool {
    queues: Vec<Arc<WorkerQueue>>,
    threads: Vec<JoinHandle<()>>,
    next: AtomicUsize,
}

impl Pool {
    /// Starts `workers` (at least 1) threads named `zns-linux-<name>-<i>`.
    pub(crate) fn new(name: &str, workers: usize) -> std::io::Result<Pool> {
        let mut pool = Pool {
            queues: Vec::new(),
            threads: Vec::new(),
            next: AtomicUsize::new(0),
        };
        for i in 0..workers.max(1) {
            let q = Arc::new(WorkerQueue::default());
            let worker_q = q.clone();
            let t = std::thread::Builder::new()
                .name(format!("zns-linux-{name}-{i}"))
                .spawn(move || {
                    while let Some(job) = worker_q.pop() {
                        job();
                    }
                })?;
            pool.queues.push(q);
            pool.threads.push(t);
        }
        Ok(pool)
    }

    /// Runs `f` on a worker (the one of `shard`, if given) and returns the
    /// future of its result. `remote` is held until the result is stored. A
    /// panic in `f` becomes Internal Error.
    pub(crate) fn submit<T, F>(&self, shard: Option<u64>, remote: Remote, f: F) -> Pending<T>
    where
        T: Send + 'static,
        F: FnOnce() -> Result<T, NvmeError> + Send + 'static,
    {
        let slot = Arc::new(Slot {
            state: Mutex::new(SlotState {
                result: None,
                waker: None,
            }),
        });
        let worker_slot = slot.clone();
        let job: Job = Box::new(move || {
            let result = catch_unwind(AssertUnwindSafe(f))
                .unwrap_or_else(|_| Err(NvmeStatus::InternalError.into()));
            let waker = {
                let mut st = worker_slot
                    .state
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                st.result = Some(result);
                st.waker.take()
            };
            if let Some(w) = waker {
                w.wake();
            }
            drop(remote);
        });
        let n = self.queues.len();
        let index = match shard {
            Some(s) => (s % n as u64) as usize,
            None => self.next.fetch_add(1, Ordering::Relaxed) % n,
        };
        self.queues[index].push(job);
        Pending { slot }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        for q in &self.queues {
            q.close();
        }
        for t in self.threads.drain(..) {
            // a worker only ends by draining its queue; a panic was caught
            let _ = t.join();
        }
    }
}

struct SlotState<T> {
    result: Option<Result<T, NvmeError>>,
    waker: Option<Waker>,
}

struct Slot<T> {
    state: Mutex<SlotState<T>>,
}

/// The result of a job still running on a worker.
pub(crate) struct Pending<T> {
    slot: Arc<Slot<T>>,
}

impl<T> Future for Pending<T> {
    type Output = Result<T, NvmeError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut st = self
            .slot
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match st.result.take() {
            Some(r) => Poll::Ready(r),
            None => {
                st.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// Alignment of every buffer handed to O_DIRECT or passthrough.
pub(crate) const BUF_ALIGN_BYTES: usize = 4096;

/// A zeroed, page-aligned heap buffer (O_DIRECT and passthrough need
/// aligned memory; callers' slices are not).
pub(crate) struct AlignedBuf {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: AlignedBuf owns its allocation exclusively (like Vec<u8>).
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    /// A buffer of `len` bytes (`len` > 0).
    pub(crate) fn zeroed(len: usize) -> AlignedBuf {
        let layout = Self::layout(len);
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        AlignedBuf { ptr, len }
    }

    pub(crate) fn from_slice(data: &[u8]) -> AlignedBuf {
        let mut b = AlignedBuf::zeroed(data.len());
        b.as_mut_slice().copy_from_slice(data);
        b
    }

    fn layout(len: usize) -> Layout {
        Layout::from_size_align(len.max(1), BUF_ALIGN_BYTES).expect("buffer layout")
    }

    pub(crate) fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr is valid for len initialised (zeroed) bytes.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: ptr is valid for len bytes and uniquely borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    pub(crate) fn as_ptr(&self) -> *const u8 {
        self.ptr
    }

    pub(crate) fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `zeroed` with the same layout.
        unsafe { dealloc(self.ptr, Self::layout(self.len)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;

    #[test]
    fn aligned_buffers_are_aligned_and_hold_data() {
        let b = AlignedBuf::from_slice(&[7u8; 5000]);
        assert_eq!(b.as_ptr() as usize % BUF_ALIGN_BYTES, 0);
        assert_eq!(b.as_slice().len(), 5000);
        assert!(b.as_slice().iter().all(|&x| x == 7));
    }

    #[test]
    fn jobs_complete_on_a_virtual_runtime_and_keep_shard_order() {
        let mut rt = zns_sim::Runtime::new(1);
        let h = rt.handle();
        let pool = Pool::new("test", 3).unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut pendings = Vec::new();
        for i in 0..50u64 {
            let log = log.clone();
            pendings.push(pool.submit(Some(7), h.remote(), move || {
                // later jobs must not overtake earlier ones of the same shard
                std::thread::yield_now();
                log.lock().unwrap().push(i);
                Ok(i * 2)
            }));
        }
        let done = Rc::new(Cell::new(0u64));
        let d = done.clone();
        rt.block_on(async move {
            for (i, p) in pendings.into_iter().enumerate() {
                assert_eq!(p.await, Ok(i as u64 * 2));
                d.set(d.get() + 1);
            }
        });
        assert_eq!(done.get(), 50);
        assert_eq!(*log.lock().unwrap(), (0..50).collect::<Vec<_>>());
    }

    #[test]
    fn a_panicking_job_is_an_internal_error() {
        let mut rt = zns_sim::Runtime::new(1);
        let h = rt.handle();
        let pool = Pool::new("panic", 1).unwrap();
        let p = pool.submit::<(), _>(None, h.remote(), || panic!("boom"));
        let r = rt.block_on(p);
        assert_eq!(r, Err(NvmeStatus::InternalError.into()));
    }
}
