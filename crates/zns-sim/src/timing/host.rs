//! The host's side of a command as the device model times it: the host
//! stack's per-command submission and completion costs ([`HostCosts`]), and
//! the host link that read data crosses ([`HostLink`]).

use super::flash::Rate;
use super::profile::{HostStack, TimingProfile};

/// Submission and completion cost (ns) of a command, by host stack.
#[derive(Debug, Clone)]
pub(super) struct HostCosts {
    /// (submit, complete) of SPDK, io_uring + none, io_uring + mq-deadline,
    /// and the device's own commands (free).
    by_stack: [(u64, u64); 4],
    /// A read's under mq-deadline, where it differs from a write's.
    mq_deadline_read_submit_ns: Option<u64>,
    mq_deadline_read_complete_ns: Option<u64>,
}

impl HostCosts {
    pub(super) fn new(p: &TimingProfile) -> HostCosts {
        HostCosts {
            by_stack: [
                (p.host_spdk_submit_ns, p.host_spdk_complete_ns),
                (
                    p.host_io_uring_none_submit_ns,
                    p.host_io_uring_none_complete_ns,
                ),
                (
                    p.host_io_uring_mq_deadline_submit_ns,
                    p.host_io_uring_mq_deadline_complete_ns,
                ),
                (0, 0),
            ],
            mq_deadline_read_submit_ns: p.host_io_uring_mq_deadline_read_submit_ns,
            mq_deadline_read_complete_ns: p.host_io_uring_mq_deadline_read_complete_ns,
        }
    }

    /// (submit, complete) of a command other than a read.
    #[inline]
    pub(super) fn of(&self, stack: HostStack) -> (u64, u64) {
        self.by_stack[match stack {
            HostStack::Spdk => 0,
            HostStack::IoUringNone => 1,
            HostStack::IoUringMqDeadline => 2,
            HostStack::Device => 3,
        }]
    }

    /// Host costs of a read: under mq-deadline a read may cost less than a
    /// write (`host_io_uring_mq_deadline_read_*_ns`).
    #[inline]
    pub(super) fn of_read(&self, stack: HostStack) -> (u64, u64) {
        let (hs, hc) = self.of(stack);
        if stack == HostStack::IoUringMqDeadline {
            (
                self.mq_deadline_read_submit_ns.unwrap_or(hs),
                self.mq_deadline_read_complete_ns.unwrap_or(hc),
            )
        } else {
            (hs, hc)
        }
    }
}

/// The host link (device → host): its rate and when it is free.
#[derive(Debug, Clone)]
pub(super) struct HostLink {
    /// `host_link_read_mibps`; `None` = unlimited.
    rate: Option<Rate>,
    /// Busy until.
    free: u64,
}

impl HostLink {
    pub(super) fn new(p: &TimingProfile) -> HostLink {
        HostLink {
            rate: (p.host_link_read_mibps > 0).then(|| Rate::from_mibps(p.host_link_read_mibps)),
            free: 0,
        }
    }

    /// The host link's share of a read of `bytes` whose command passed the
    /// front end at `t`: link time is reserved in command order (front-end
    /// times never decrease), `bytes / host_link_read_mibps` per read, and
    /// the read cannot complete before its slot ends. An idle link adds
    /// nothing (the slot ends long before the flash data is there); a
    /// saturated one caps read bandwidth at the link rate.
    pub(super) fn read(&mut self, t: u64, bytes: u64) -> u64 {
        match self.rate {
            None => t,
            Some(rate) => {
                let s = t.max(self.free);
                self.free = s + rate.ns(bytes);
                self.free
            }
        }
    }
}
