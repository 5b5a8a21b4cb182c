//! Sequential read-ahead: the controller's table of sequential read streams.
//!
//! A stream is a run of reads of one namespace, each starting where the
//! previous one ended, inside one zone (or anywhere in a conventional
//! namespace). Once a run is `readahead_trigger_reads` long, the controller
//! prefetches the following program units from the dies into DRAM and keeps
//! `readahead_window_units` units ahead of the host. A read that starts inside
//! the prefetched data is a hit: it waits for the data of its units (if the
//! prefetch is still in flight) and is served by the hit engine, without a die
//! read. Everything else is timed as a flash read.
//!
//! This module is the table only (lookup, replacement, invalidation); the
//! prefetch reads themselves are scheduled by `FlashArray` on its dies and
//! channels. Fixed-size arrays: no allocation per command.
//!
//! Invariants (per entry): `lo <= hi`, `hi - lo <= RING`, the `live` bit is
//! set exactly when `lo < hi`, `from >= base + lo * unit` when `lo < hi`, and
//! `ready[k % RING]` is the time the data of unit `k` is in DRAM for every
//! `k` in `lo..hi`.

/// Program units a stream can hold: its window plus the units of one read.
pub(crate) const RING: u64 = 32;
/// Most streams a table can track (`readahead_streams` is validated against it).
pub(crate) const MAX_STREAMS: usize = 16;

/// One tracked stream (its `next` and last use are in `StreamTable`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Stream {
    pub(crate) ns: u32,
    /// Consecutive sequential reads seen (saturating).
    pub(crate) run: u32,
    /// Byte offset of unit 0: the zone start, or 0 on a conventional namespace.
    pub(crate) base: u64,
    /// First byte of the prefetched data held.
    pub(crate) from: u64,
    /// Prefetched (issued) units held: `lo..hi`, empty when `lo == hi`.
    pub(crate) lo: u64,
    pub(crate) hi: u64,
}

impl Stream {
    /// Byte just past the prefetched data held.
    #[inline]
    pub(crate) fn held_end(&self, unit: u64) -> u64 {
        self.base.saturating_add(self.hi.saturating_mul(unit))
    }
}

/// What a read is to the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lookup {
    /// Not part of a tracked stream; it was recorded as a new one.
    Miss,
    /// Starts where stream `i`'s last read ended, outside its prefetched data.
    Continue(usize),
    /// Starts inside stream `i`'s prefetched data.
    Hit(usize),
}

/// The stream table of one controller. The fields a lookup scans are kept in
/// small arrays of their own (a random read touches two cache lines).
#[derive(Debug, Clone)]
pub(crate) struct StreamTable {
    /// Where each stream's last read ended (`u64::MAX`: empty entry; no read
    /// starts there).
    next: [u64; MAX_STREAMS],
    /// Last use of each entry (0: empty), for least-recently-used replacement.
    stamp: [u64; MAX_STREAMS],
    /// Entries holding prefetched data (`lo < hi`), one bit each.
    live: u16,
    pub(crate) s: [Stream; MAX_STREAMS],
    /// Per stream: when each held unit's data is in DRAM (index `unit % RING`).
    pub(crate) ready: [[u64; RING as usize]; MAX_STREAMS],
    n: usize,
    clock: u64,
}

impl StreamTable {
    /// A table tracking `n` streams (at most `MAX_STREAMS`; 0 = read-ahead off).
    pub(crate) fn new(n: usize) -> StreamTable {
        StreamTable {
            next: [u64::MAX; MAX_STREAMS],
            stamp: [0; MAX_STREAMS],
            live: 0,
            s: [Stream::default(); MAX_STREAMS],
            ready: [[0; RING as usize]; MAX_STREAMS],
            n: n.min(MAX_STREAMS),
            clock: 0,
        }
    }

    /// Read-ahead is on.
    #[inline]
    pub(crate) fn enabled(&self) -> bool {
        self.n > 0
    }

    /// Where stream `i`'s last read ended.
    #[inline]
    pub(crate) fn next(&self, i: usize) -> u64 {
        self.next[i]
    }

    /// Stream `i`'s last read ended at `end`.
    #[inline]
    pub(crate) fn set_next(&mut self, i: usize, end: u64) {
        self.next[i] = end;
    }

    /// Records whether stream `i` holds prefetched data (after changing
    /// its `lo`/`hi`).
    #[inline]
    pub(crate) fn update_live(&mut self, i: usize) {
        let bit = 1u16 << i;
        if self.s[i].lo < self.s[i].hi {
            self.live |= bit;
        } else {
            self.live &= !bit;
        }
    }

    /// Classifies the read `[off, end)` of namespace `ns` whose units are
    /// counted from `base`, and refreshes the stream it belongs to. A read
    /// that belongs to no stream replaces the least useful entry (an empty
    /// one, else the least recently used one that holds no prefetched data,
    /// else the least recently used one) and starts a run of length 1.
    #[inline]
    pub(crate) fn lookup(&mut self, ns: u32, base: u64, off: u64, end: u64, unit: u64) -> Lookup {
        self.clock += 1;
        let mut live = self.live;
        while live != 0 {
            let i = live.trailing_zeros() as usize;
            live &= live - 1;
            let st = &self.s[i];
            if st.ns == ns && st.base == base && off >= st.from && off < st.held_end(unit) {
                self.stamp[i] = self.clock;
                return Lookup::Hit(i);
            }
        }
        for i in 0..self.n {
            if self.next[i] == off && self.s[i].ns == ns && self.s[i].base == base {
                self.stamp[i] = self.clock;
                return Lookup::Continue(i);
            }
        }
        // Stamps stay far below 2^63; the top bit ranks prefetching entries last.
        let mut victim = 0;
        let mut oldest = u64::MAX;
        for i in 0..self.n {
            let key = self.stamp[i] | (u64::from((self.live >> i) & 1) << 63);
            if key < oldest {
                oldest = key;
                victim = i;
            }
        }
        self.next[victim] = end;
        self.stamp[victim] = self.clock;
        self.live &= !(1 << victim);
        self.s[victim] = Stream {
            ns,
            run: 1,
            base,
            from: 0,
            lo: 0,
            hi: 0,
        };
        Lookup::Miss
    }

    /// Forgets the streams of namespace `ns` in the zone starting at `base`
    /// (the zone was reset or finished).
    pub(crate) fn drop_zone(&mut self, ns: u32, base: u64) {
        for i in 0..self.n {
            if self.next[i] != u64::MAX && self.s[i].ns == ns && self.s[i].base == base {
                self.next[i] = u64::MAX;
                self.stamp[i] = 0;
                self.live &= !(1 << i);
            }
        }
    }

    /// Data `[start, end)` of namespace `ns` (units counted from `base`) was
    /// written: prefetched data overlapping it is discarded (the stream
    /// itself is kept and prefetches again at its next sequential read).
    #[inline]
    pub(crate) fn overwrite(&mut self, ns: u32, base: u64, start: u64, end: u64, unit: u64) {
        let mut live = self.live;
        while live != 0 {
            let i = live.trailing_zeros() as usize;
            live &= live - 1;
            let st = &mut self.s[i];
            if st.ns == ns && st.base == base && start < st.held_end(unit) && end > st.from {
                st.lo = st.hi;
                self.live &= !(1 << i);
            }
        }
    }

    /// Some stream holds prefetched data.
    #[inline]
    pub(crate) fn any_live(&self) -> bool {
        self.live != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_detected_and_random_reads_replace_the_oldest_idle_entry() {
        let unit = 1 << 16;
        let mut t = StreamTable::new(2);
        assert_eq!(t.lookup(1, 0, 0, 4096, unit), Lookup::Miss);
        assert_eq!(t.lookup(1, 0, 4096, 8192, unit), Lookup::Continue(0));
        // (what FlashArray does next:) stream 0 prefetches units 0..2 from byte 8192
        t.set_next(0, 8192);
        t.s[0].from = 8192;
        t.s[0].lo = 0;
        t.s[0].hi = 2;
        t.update_live(0);
        // another namespace / another base does not continue it
        assert_eq!(t.lookup(2, 0, 8192, 12288, unit), Lookup::Miss);
        assert_eq!(t.lookup(1, 1 << 30, 8192, 12288, unit), Lookup::Miss);
        assert_eq!(t.next(0), 8192, "the prefetching stream is replaced last");
        // a read inside the prefetched data is a hit
        assert_eq!(t.lookup(1, 0, 65536, 69632, unit), Lookup::Hit(0));
        // below `from` or beyond the held units: not a hit
        assert_eq!(t.lookup(1, 0, 4096, 8192, unit), Lookup::Miss);
        assert_eq!(
            t.lookup(1, 0, 1 << 17, (1 << 17) + 4096, unit),
            Lookup::Miss
        );
        assert_eq!(t.next(0), 8192);
        // overwriting the held data empties the window, dropping the zone forgets it
        t.overwrite(1, 0, 100_000, 100_100, unit);
        assert!(!t.any_live());
        assert_eq!(t.lookup(1, 0, 8192, 12288, unit), Lookup::Continue(0));
        t.drop_zone(1, 0);
        assert_eq!(t.next(0), u64::MAX);
        assert_eq!(t.lookup(1, 0, 12288, 16384, unit), Lookup::Miss);
    }
}
