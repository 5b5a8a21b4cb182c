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
//! This module is the table (lookup, replacement, invalidation) and the
//! engine around it, [`ReadAhead`]: when a stream prefetches and how far,
//! which units a prefetch reads, and the hit engine that serves hits from
//! DRAM. The prefetch reads themselves are scheduled by `FlashArray` on its
//! dies and channels. Fixed-size arrays: no allocation per command.
//!
//! Invariants (per entry): `lo <= hi`, `hi - lo <= RING`, the `live` bit is
//! set exactly when `lo < hi`, `from >= base + lo * unit` when `lo < hi`, and
//! `ready[k % RING]` is the time the data of unit `k` is in DRAM for every
//! `k` in `lo..hi`.

use super::flash::Rate;

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

/// The read-ahead engine of a controller: the stream table, the knobs that
/// start and size a stream's prefetch, and the hit engine (a DRAM transfer
/// stage) that serves hits. `FlashArray` reads the units [`ReadAhead::fill_upto`]
/// names on its dies and records them with [`ReadAhead::filled`].
#[derive(Debug, Clone)]
pub(crate) struct ReadAhead {
    pub(crate) table: StreamTable,
    /// Hit engine busy-until, ns.
    hit_free_ns: u64,
    /// Hit engine transfer rate (`readahead_hit_mibps`).
    hit_rate: Rate,
    /// Units a stream keeps prefetched past its last read
    /// (`readahead_window_units`).
    pub(crate) window_units: u64,
    /// Sequential reads before a stream prefetches (`readahead_trigger_reads`).
    trigger_reads: u32,
}

impl ReadAhead {
    /// An engine tracking `streams` streams (0: read-ahead off).
    pub(crate) fn new(
        streams: usize,
        hit_mibps: u64,
        window_units: u64,
        trigger_reads: u32,
    ) -> ReadAhead {
        ReadAhead {
            table: StreamTable::new(streams),
            hit_free_ns: 0,
            hit_rate: Rate::from_mibps(hit_mibps.max(1)),
            window_units,
            trigger_reads,
        }
    }

    /// The area a read-ahead stream of the read at `off` lives in: the first
    /// byte its program units are counted from, and the end it never
    /// prefetches past (the zone's capacity; unbounded on a conventional
    /// namespace, `conv`).
    #[inline]
    pub(crate) fn area(
        conv: bool,
        off: u64,
        zone_size_bytes: u64,
        zone_capacity_bytes: u64,
    ) -> (u64, u64) {
        if conv {
            (0, u64::MAX)
        } else {
            let zs = zone_size_bytes;
            let start = if zs.is_power_of_two() {
                off & !(zs - 1)
            } else {
                off - off % zs
            };
            (start, start.saturating_add(zone_capacity_bytes))
        }
    }

    /// Stream `i` was continued by a flash read ending at `end`: once the run
    /// is long enough, its prefetch restarts from `end` (a new window if the
    /// read left the old one behind). Returns the unit to prefetch up to, or
    /// `None` while the run is too short.
    pub(crate) fn continued(&mut self, i: usize, end: u64, unit: u64) -> Option<u64> {
        self.table.set_next(i, end);
        let st = &mut self.table.s[i];
        st.run = st.run.saturating_add(1);
        if st.run < self.trigger_reads {
            return None;
        }
        let u1 = (end - 1 - st.base) / unit;
        if st.lo == st.hi || u1 >= st.lo {
            let lo = if (end - st.base) % unit == 0 {
                u1 + 1
            } else {
                u1
            };
            st.lo = lo;
            st.hi = lo;
            st.from = end;
        }
        Some(u1 + self.window_units)
    }

    /// The read `[off, end)` is the next of stream `i` and inside its
    /// prefetched data: the units behind it are released. Returns the unit
    /// to prefetch up to.
    pub(crate) fn hit(&mut self, i: usize, off: u64, end: u64, unit: u64) -> u64 {
        self.table.set_next(i, end);
        let st = &mut self.table.s[i];
        let u0 = (off - st.base) / unit;
        let u1 = (end - 1 - st.base) / unit;
        st.run = st.run.saturating_add(1);
        if u0 > st.lo {
            st.lo = u0;
            st.from = st.from.max(st.base + u0 * unit);
        }
        u1 + self.window_units
    }

    /// The last unit of stream `i` to prefetch when asked for units up to
    /// `upto`: bounded by the area's end `limit` and by the ring. The units
    /// to read are `s[i].hi..=` that.
    pub(crate) fn fill_upto(&self, i: usize, limit: u64, upto: u64, unit: u64) -> u64 {
        let st = &self.table.s[i];
        let last = (limit - 1 - st.base) / unit;
        upto.min(last).min(st.lo + RING - 1)
    }

    /// Stream `i`'s prefetch reads were issued up to (not including) unit
    /// `end_unit`.
    pub(crate) fn filled(&mut self, i: usize, end_unit: u64) {
        self.table.s[i].hi = self.table.s[i].hi.max(end_unit);
        self.table.update_live(i);
    }

    /// Serves `[off, end)` (held by stream `i`) from DRAM from `t`: once the
    /// data of its units is in, the hit engine transfers it, taking at least
    /// `hit_ns`. Returns when the transfer ends.
    pub(crate) fn serve(
        &mut self,
        t: u64,
        i: usize,
        off: u64,
        end: u64,
        unit: u64,
        hit_ns: u64,
    ) -> u64 {
        let base = self.table.s[i].base;
        let ring = &self.table.ready[i];
        let mut ready = t;
        for k in (off - base) / unit..=(end - 1 - base) / unit {
            ready = ready.max(ring[(k % RING) as usize]);
        }
        let s = ready.max(self.hit_free_ns);
        self.hit_free_ns = s + hit_ns.max(self.hit_rate.ns(end - off));
        self.hit_free_ns
    }

    /// Data of namespace `ns` (units counted from `base`) was written from
    /// byte `start` on, `bytes` long: prefetched data over it is stale.
    #[inline]
    pub(crate) fn written(&mut self, ns: u32, base: u64, start: u64, bytes: u64, unit: u64) {
        if self.table.any_live() {
            self.table
                .overwrite(ns, base, start, start.saturating_add(bytes), unit);
        }
    }

    /// The zone of namespace `ns` starting at byte `base` was reset or
    /// finished: its streams are forgotten.
    #[inline]
    pub(crate) fn zone_dropped(&mut self, ns: u32, base: u64) {
        if self.table.enabled() {
            self.table.drop_zone(ns, base);
        }
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
