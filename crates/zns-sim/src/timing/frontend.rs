//! The controller's front end: the one FIFO every command of every
//! namespace passes (`frontend_ns` each), the reads' own lane
//! (`reads_pass_stalled_writes`), and the engine queue whose room it waits
//! for (`engine_queue_slots`): a write path stalled for buffer room holds
//! the front end through it (head-of-line blocking).

use super::profile::TimingProfile;

/// Slots of the ring of engine start times (the most `engine_queue_slots`).
const RING: usize = 64;

/// Busy-until times of the front end and the engine queue.
#[derive(Debug, Clone)]
pub(super) struct FrontEnd {
    /// Time a command takes to pass.
    frontend_ns: u64,
    /// Reads take their own lane (`reads_pass_stalled_writes`).
    reads_own_lane: bool,
    /// When the shared FIFO passes its next command.
    free: u64,
    /// The reads' own front-end lane (`reads_pass_stalled_writes`).
    read_free: u64,
    /// Engine start times of the last write-path commands (ring).
    eng_starts: [u64; RING],
    eng_pos: usize,
    eng_slots: usize,
}

impl FrontEnd {
    pub(super) fn new(p: &TimingProfile) -> FrontEnd {
        FrontEnd {
            frontend_ns: p.frontend_ns,
            reads_own_lane: p.reads_pass_stalled_writes,
            free: 0,
            read_free: 0,
            eng_starts: [0; RING],
            eng_pos: 0,
            eng_slots: p.engine_queue_slots as usize,
        }
    }

    /// A command reaching the front end at `t` leaves it at the returned time.
    #[inline]
    pub(super) fn pass(&mut self, t: u64) -> u64 {
        let e = t.max(self.free) + self.frontend_ns;
        self.free = e;
        e
    }

    /// The front end for a read: the shared FIFO, or with
    /// `reads_pass_stalled_writes` the reads' own lane, which writes stalled
    /// for engine or buffer room do not hold.
    #[inline]
    pub(super) fn pass_read(&mut self, t: u64) -> u64 {
        if !self.reads_own_lane {
            return self.pass(t);
        }
        let e = t.max(self.read_free) + self.frontend_ns;
        self.read_free = e;
        e
    }

    /// A write-path command entered its engine at `es`: the front end may pass
    /// a new command only once the engine queue has room, i.e. once the
    /// command `engine_queue_slots` places back has started.
    #[inline]
    pub(super) fn engine_entered(&mut self, es: u64) {
        self.eng_starts[self.eng_pos] = es;
        self.eng_pos = (self.eng_pos + 1) % RING;
        let oldest = self.eng_starts[(self.eng_pos + RING - self.eng_slots) % RING];
        self.free = self.free.max(oldest);
    }
}
