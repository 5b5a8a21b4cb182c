//! The host side of a job that the device model does not see (issue 16):
//! fio's submission latency with libaio (its `slat`, which its `clat`
//! leaves out), and the time-sharing of polled jobs' threads when more of
//! them than CPUs are runnable. Both are deterministic; docs/bench.md and
//! docs/timing-model.md give the data they come from.

use zns_sim::timing::{HostStack, TimingProfile};

/// fio's libaio engine: what `io_submit` costs before the command reaches
/// the device, and what fio counts as its submission latency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Slat {
    /// `host_libaio_submit_ns`: the call itself (every I/O).
    submit_ns: u64,
    /// `host_mq_deadline_request_ns`: a write that becomes a new request of
    /// mq-deadline (not merged into a queued one).
    request_ns: u64,
    /// The stack's own submission cost (the device model charges it; a
    /// command dispatched inside the call has it in its slat).
    stack_read_ns: u64,
    stack_write_ns: u64,
    mq_deadline: bool,
}

impl Slat {
    pub(super) fn new(t: &TimingProfile, stack: HostStack) -> Slat {
        Slat {
            submit_ns: t.host_libaio_submit_ns,
            request_ns: t.host_mq_deadline_request_ns,
            stack_read_ns: t.host_submit_ns(stack, true),
            stack_write_ns: t.host_submit_ns(stack, false),
            mq_deadline: stack == HostStack::IoUringMqDeadline,
        }
    }

    /// For an I/O: (host time before the device sees it, fio's slat).
    /// `zone_inflight` counts the job's writes in flight in the write's zone,
    /// this one included (0 = not a zone write); `queued` says whether the
    /// zone has a request waiting in the scheduler. Under mq-deadline a zone
    /// write with another in flight waits (the zone write lock): it is a new
    /// request, dispatched later from the completion path, unless a request
    /// is already waiting, which it then merges into.
    pub(super) fn of(&self, write: bool, zone_inflight: u32, queued: bool) -> (u64, u64) {
        if !write {
            return (self.submit_ns, self.submit_ns + self.stack_read_ns);
        }
        if !self.mq_deadline {
            return (self.submit_ns, self.submit_ns + self.stack_write_ns);
        }
        match (zone_inflight, queued) {
            // dispatched inside the call: the stack's submission cost (which
            // the device model charges) is the request's whole way down
            (0 | 1, _) => (self.submit_ns, self.submit_ns + self.stack_write_ns),
            (_, false) => {
                let new = self.submit_ns + self.request_ns;
                (new, new)
            }
            (_, true) => (self.submit_ns, self.submit_ns),
        }
    }

    /// Whether the write leaves a request waiting in the scheduler.
    pub(super) fn queues(&self, write: bool, zone_inflight: u32) -> bool {
        self.mq_deadline && write && zone_inflight >= 2
    }
}

/// When a polled job's thread is on a CPU: periodically, `on_len_ns` from
/// `on_from_ns` in every `period_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct CpuShare {
    period_ns: u64,
    on_from_ns: u64,
    on_len_ns: u64,
}

impl CpuShare {
    /// The first instant at or after `t` at which the thread runs.
    pub(super) fn next_on(&self, t: u64) -> u64 {
        let ph = t % self.period_ns;
        if ph >= self.on_from_ns && ph < self.on_from_ns + self.on_len_ns {
            return t;
        }
        let base = t - ph;
        if ph < self.on_from_ns {
            base + self.on_from_ns
        } else {
            base + self.period_ns + self.on_from_ns
        }
    }
}

/// Linux CFS defaults (HZ = 250): the scheduling period scales with
/// 1 + log2(CPUs), at most 8 counted: 6 ms (latency) and 0.75 ms (minimum
/// granularity) per step; a running thread is preempted at the first tick
/// after it has run its ideal slice.
const CFS_LATENCY_NS: u64 = 6_000_000;
const CFS_MIN_GRANULARITY_NS: u64 = 750_000;
const TICK_NS: u64 = 4_000_000;

/// The slice a thread runs before the next one on its CPU when `n` share it.
pub(super) fn cfs_slice_ns(cpus: usize, n: usize) -> u64 {
    let factor = 1 + u64::from(cpus.clamp(1, 8).ilog2());
    let ideal = (CFS_LATENCY_NS * factor / n.max(1) as u64).max(CFS_MIN_GRANULARITY_NS * factor);
    (ideal / TICK_NS + 1) * TICK_NS
}

/// `threads` always-runnable threads on `cpus` CPUs, placed round-robin
/// (thread i on CPU i mod cpus, as the load balancer spreads them): a
/// thread alone on its CPU always runs (None); threads sharing one take
/// turns of a CFS slice each.
pub(super) fn share_cpus(cpus: usize, threads: usize) -> Vec<Option<CpuShare>> {
    let cpus = cpus.max(1);
    (0..threads)
        .map(|i| {
            let cpu = i % cpus;
            let n = (threads - cpu).div_ceil(cpus);
            if n < 2 {
                return None;
            }
            let slice = cfs_slice_ns(cpus, n);
            Some(CpuShare {
                period_ns: slice * n as u64,
                on_from_ns: slice * (i / cpus) as u64,
                on_len_ns: slice,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fourteen_polled_threads_on_ten_cpus() {
        // NVMeBenchmarks' 14-zone runs: 10 CPUs, 14 SPDK jobs
        let s = share_cpus(10, 14);
        assert_eq!(s.iter().filter(|c| c.is_none()).count(), 6);
        assert_eq!(cfs_slice_ns(10, 2), 16_000_000);
        let a = s[0].unwrap();
        let b = s[10].unwrap();
        assert_eq!(a.next_on(0), 0);
        assert_eq!(b.next_on(0), 16_000_000);
        assert_eq!(a.next_on(16_000_000), 32_000_000);
        assert_eq!(b.next_on(20_000_000), 20_000_000);
        assert!(share_cpus(10, 8).iter().all(Option::is_none));
    }

    #[test]
    fn libaio_slat_under_mq_deadline() {
        let s = Slat {
            submit_ns: 1340,
            request_ns: 3520,
            stack_read_ns: 1030,
            stack_write_ns: 1955,
            mq_deadline: true,
        };
        assert_eq!(s.of(true, 1, false), (1340, 3295));
        assert_eq!(s.of(true, 2, false), (4860, 4860));
        assert_eq!(s.of(true, 5, false), (4860, 4860));
        assert_eq!(s.of(true, 5, true), (1340, 1340));
        assert_eq!(s.of(false, 0, false), (1340, 2370));
        assert!(s.queues(true, 2) && !s.queues(true, 1) && !s.queues(false, 3));
    }
}
