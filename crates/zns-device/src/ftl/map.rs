//! The FTL's page map: the L2P (one `u32` slot per map entry, in segments
//! of 2^16 entries allocated when first written) and the P2L (one `u32`
//! map entry per slot, per block, allocated when the block is first
//! opened). Which slot an entry gets, and what a block's slots are worth,
//! is the FTL's; this is only the two tables.

/// Marks an unmapped L2P entry and an invalid P2L slot (and the end of a
/// bucket list).
pub(super) const NONE: u32 = u32::MAX;
/// L2P segment: 2^16 mapping units (256 KiB of entries).
const SEG_SHIFT: u32 = 16;
const SEG_LEN: usize = 1 << SEG_SHIFT;

/// The L2P and the P2L.
#[derive(Debug)]
pub(super) struct PageMap {
    l2p: Vec<Option<Box<[u32]>>>,
    /// Per block (die-major).
    p2l: Vec<Option<Box<[u32]>>>,
}

impl PageMap {
    /// An empty map of `entries` logical entries over `blocks` blocks.
    pub(super) fn new(entries: u64, blocks: usize) -> PageMap {
        let segs = (entries as usize).div_ceil(SEG_LEN);
        PageMap {
            l2p: (0..segs).map(|_| None).collect(),
            p2l: (0..blocks).map(|_| None).collect(),
        }
    }

    /// Blocks the P2L covers.
    pub(super) fn blocks(&self) -> usize {
        self.p2l.len()
    }

    /// Entries allocated (L2P, and P2L at `slots_per_block` a block): the
    /// map's memory is 4 bytes each.
    pub(super) fn resident_entries(&self, slots_per_block: u32) -> u64 {
        let l2p = self.l2p.iter().filter(|s| s.is_some()).count() as u64 * SEG_LEN as u64;
        let p2l = self.p2l.iter().filter(|s| s.is_some()).count() as u64;
        l2p + p2l * u64::from(slots_per_block)
    }

    /// The slot map entry `e` is stored in, if mapped.
    #[inline]
    pub(super) fn entry(&self, e: u64) -> Option<u32> {
        let seg = self.l2p.get((e >> SEG_SHIFT) as usize)?.as_ref()?;
        let s = seg[(e as usize) & (SEG_LEN - 1)];
        (s != NONE).then_some(s)
    }

    /// Maps entry `e` to `slot` (`NONE`: unmaps it).
    #[inline]
    pub(super) fn set(&mut self, e: u64, slot: u32) {
        let seg = self.l2p[(e >> SEG_SHIFT) as usize]
            .get_or_insert_with(|| vec![NONE; SEG_LEN].into_boxed_slice());
        seg[(e as usize) & (SEG_LEN - 1)] = slot;
    }

    /// If nothing was ever written in the segment of entry `e`: the first
    /// entry of the next segment.
    pub(super) fn unwritten_until(&self, e: u64) -> Option<u64> {
        let seg = (e >> SEG_SHIFT) as usize;
        self.l2p[seg]
            .is_none()
            .then(|| ((seg as u64) + 1) << SEG_SHIFT)
    }

    /// The entry slot `off` of `block` holds (`NONE`: none).
    pub(super) fn owner(&self, block: u32, off: u32) -> u32 {
        self.p2l[block as usize]
            .as_ref()
            .map_or(NONE, |p| p[off as usize])
    }

    /// The P2L of `block`, if allocated.
    pub(super) fn block(&self, block: usize) -> Option<&[u32]> {
        self.p2l[block].as_deref()
    }

    /// Slot `off` of `block` now holds entry `e` (`NONE`: is invalid).
    #[inline]
    pub(super) fn set_owner(&mut self, block: u32, off: u32, e: u32) {
        if let Some(p) = self.p2l[block as usize].as_mut() {
            p[off as usize] = e;
        }
    }

    /// Opens `block` (its P2L allocated on first use): every slot invalid.
    pub(super) fn open_block(&mut self, block: u32, slots_per_block: u32) {
        let spb = slots_per_block as usize;
        let p = self.p2l[block as usize].get_or_insert_with(|| vec![NONE; spb].into_boxed_slice());
        p.fill(NONE);
    }

    /// Takes the P2L of `block` out (a victim being relocated) ...
    pub(super) fn take_block(&mut self, block: u32) -> Option<Box<[u32]>> {
        self.p2l[block as usize].take()
    }

    /// ... and gives it back erased (the buffer is kept for reuse).
    pub(super) fn erased_block(&mut self, block: u32, mut p2l: Option<Box<[u32]>>) {
        if let Some(p) = p2l.as_mut() {
            p.fill(NONE);
        }
        self.p2l[block as usize] = p2l;
    }

    /// Splits entries of `k` mapping units into one entry per mapping unit
    /// (`entries` of them now): entry `e` at slot `s` becomes entries
    /// `e·k + j` at slots `s·k + j`.
    pub(super) fn refine(&mut self, k: u32, entries: u64) {
        let ku = k as usize;
        let segs = (entries as usize).div_ceil(SEG_LEN);
        let mut l2p: Vec<Option<Box<[u32]>>> = (0..segs).map(|_| None).collect();
        for (si, seg) in self.l2p.iter().enumerate() {
            let Some(seg) = seg else { continue };
            for j in 0..ku {
                let fs = si * ku + j;
                if fs >= segs {
                    break;
                }
                let base = j * SEG_LEN / ku;
                let mut fine = vec![NONE; SEG_LEN].into_boxed_slice();
                for (i, f) in fine.iter_mut().enumerate() {
                    let s = seg[base + i / ku];
                    if s != NONE {
                        *f = s * k + (i % ku) as u32;
                    }
                }
                l2p[fs] = Some(fine);
            }
        }
        self.l2p = l2p;
        for p in self.p2l.iter_mut() {
            if let Some(c) = p.take() {
                let mut fine = vec![NONE; c.len() * ku].into_boxed_slice();
                for (i, &m) in c.iter().enumerate() {
                    if m != NONE {
                        for j in 0..ku {
                            fine[i * ku + j] = m * k + j as u32;
                        }
                    }
                }
                *p = Some(fine);
            }
        }
    }
}
