//! The controller write buffer and a recent-activity meter.
//!
//! Write buffer invariants:
//! * `used` = bytes admitted (or committed from a ZRWA) and not yet released.
//!   Bytes are released when the program that carries them to flash ends
//!   (events in `releases`), or discarded when their zone is reset before a
//!   full program unit was collected.
//! * Admissions are processed in non-decreasing time (`clock`): a write that
//!   finds the buffer full waits for the earliest releases that make room,
//!   and later admissions cannot overtake it (the controller's write path is
//!   in order).
//! * The release heap holds at most one entry per scheduled program unit whose
//!   bytes are still in the buffer, so its size is bounded by
//!   `capacity / program unit` plus the units of one command; its storage is
//!   reserved up front.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

#[derive(Debug, Clone)]
pub(crate) struct WriteBuffer {
    capacity: u64,
    used: u64,
    clock: u64,
    releases: BinaryHeap<Reverse<(u64, u64)>>,
    last_release: u64,
}

impl WriteBuffer {
    pub(crate) fn new(capacity: u64, unit_bytes: u64) -> WriteBuffer {
        let slots = (capacity / unit_bytes.max(1))
            .saturating_mul(2)
            .saturating_add(1024);
        WriteBuffer {
            capacity,
            used: 0,
            clock: 0,
            releases: BinaryHeap::with_capacity(slots.min(1 << 20) as usize),
            last_release: 0,
        }
    }

    fn release_due(&mut self, t: u64) {
        while let Some(&Reverse((when, bytes))) = self.releases.peek() {
            if when > t {
                break;
            }
            self.used = self.used.saturating_sub(bytes);
            self.releases.pop();
        }
    }

    /// Earliest time >= `t` at which `bytes` fit; if `occupy`, they are then
    /// counted as used. A request larger than the whole buffer waits until the
    /// buffer is empty.
    pub(crate) fn admit(&mut self, t: u64, bytes: u64, occupy: bool) -> u64 {
        let mut t = t.max(self.clock);
        self.release_due(t);
        let need = bytes.min(self.capacity);
        while self.used.saturating_add(need) > self.capacity {
            match self.releases.pop() {
                Some(Reverse((when, b))) => {
                    self.used = self.used.saturating_sub(b);
                    t = t.max(when);
                }
                // Only bytes of incomplete program units remain: they cannot
                // drain until more data arrives, so admit (over-commit).
                None => break,
            }
        }
        if occupy {
            self.used = self.used.saturating_add(bytes);
        }
        self.clock = t;
        t
    }

    /// Counts `bytes` as used without waiting (ZRWA commit into the buffer).
    pub(crate) fn add(&mut self, bytes: u64) {
        self.used = self.used.saturating_add(bytes);
    }

    /// Drops `bytes` that will never be programmed (zone reset).
    pub(crate) fn discard(&mut self, bytes: u64) {
        self.used = self.used.saturating_sub(bytes);
    }

    /// `bytes` leave the buffer at `when` (their program ends).
    pub(crate) fn release_at(&mut self, when: u64, bytes: u64) {
        self.releases.push(Reverse((when, bytes)));
        self.last_release = self.last_release.max(when);
    }

    /// Time by which every scheduled program has ended.
    pub(crate) fn last_release(&self) -> u64 {
        self.last_release
    }

    /// Admission time of the latest write: later than now while writes wait
    /// for room (the buffer is full).
    pub(crate) fn admitting_until(&self) -> u64 {
        self.clock
    }

    /// Bytes currently accounted in the buffer (as of the last admission).
    pub(crate) fn used(&self) -> u64 {
        self.used
    }
}

/// Fraction of recent time during which commands of one class were in flight,
/// over two fixed windows (the current one and the previous one).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ActivityMeter {
    window: u64,
    bucket_start: u64,
    cur: u64,
    prev: u64,
    busy_until: u64,
}

impl ActivityMeter {
    pub(crate) fn new(window: u64) -> ActivityMeter {
        ActivityMeter {
            window: window.max(1),
            bucket_start: 0,
            cur: 0,
            prev: 0,
            busy_until: 0,
        }
    }

    fn roll(&mut self, t: u64) {
        if t < self.bucket_start + self.window {
            return;
        }
        let n = (t - self.bucket_start) / self.window;
        self.prev = if n == 1 { self.cur } else { 0 };
        self.cur = 0;
        self.bucket_start += n * self.window;
    }

    /// A command in flight from `start` to `end`.
    #[inline]
    pub(crate) fn record(&mut self, start: u64, end: u64) {
        self.roll(start);
        let from = start.max(self.busy_until);
        if end > from {
            self.cur += end - from;
            self.busy_until = end;
        }
    }

    /// Busy fraction of the recent past seen from `t`, in ppm.
    pub(crate) fn busy_ppm(&mut self, t: u64) -> u64 {
        self.roll(t);
        let span = self.window + t.saturating_sub(self.bucket_start);
        let busy = (self.prev + self.cur).min(span);
        (u128::from(busy) * 1_000_000 / u128::from(span)) as u64
    }
}

/// splitmix64: the deterministic draw used for jitter.
#[inline]
pub(crate) fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_buffer_waits_for_release() {
        let mut b = WriteBuffer::new(100, 10);
        assert_eq!(b.admit(0, 60, true), 0);
        b.release_at(500, 50);
        assert_eq!(b.admit(10, 30, true), 10);
        // 90 used; 20 more needs the release at 500
        assert_eq!(b.admit(20, 20, true), 500);
        assert_eq!(b.used(), 60);
        // later admissions cannot go back in time
        assert_eq!(b.admit(30, 1, true), 500);
    }

    #[test]
    fn meter_measures_busy_fraction() {
        let mut m = ActivityMeter::new(1000);
        for i in 0..10 {
            m.record(i * 200, i * 200 + 100);
        }
        let f = m.busy_ppm(2000);
        assert!((400_000..=600_000).contains(&f), "{f}");
        assert_eq!(m.busy_ppm(10_000), 0);
    }
}
