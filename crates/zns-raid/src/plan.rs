//! The write planner: `Inner::plan` splits a logical write into per-stripe
//! `Piece`s of member sub-I/Os (`SubIo`: data, full parity, partial parity in
//! a ZRWA slot, in place, in a metadata zone or in a PP log zone), folding the
//! data into the zone's running parity (`ZoneRt`'s stripe methods, here too);
//! and `xor_into`, the XOR every parity computation uses. Pure computation on
//! `State`: no I/O, no waiting (that is `engine.rs`).

use crate::md::{Record, RecordKind};
use crate::state::{Inner, State, ZoneRt};

/// Which gate a member sub-I/O waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gate {
    /// Data or parity at a stripe row.
    Row(u64),
    /// A PP or WP-log slot: only the ZRWA window; skipped if already committed.
    Slot,
}

pub(crate) enum SubIo {
    Write {
        dev: u32,
        off: u64,
        data: Payload,
        gate: Gate,
    },
    /// Host data: bytes `range` of the logical write's data (which the write's
    /// task holds: no copy per sub-I/O).
    Data {
        dev: u32,
        off: u64,
        range: std::ops::Range<usize>,
        gate: Gate,
    },
    Md {
        dev: u32,
        rec: Record,
    },
    /// Partial parity `pp` appended to a member's PP log zone (RAIZN), with
    /// or without a metadata header block (`rec`, its payload left empty).
    PpLog {
        dev: u32,
        rec: Record,
        pp: Payload,
    },
}

/// The bytes of a parity or log sub-I/O: computed into a pooled buffer, or
/// (timing-only arrays, `RaidOptions::timing_only`) that many zero bytes.
pub(crate) enum Payload {
    Bytes(Vec<u8>),
    Zeros(usize),
}

impl Payload {
    /// The bytes as an owned buffer (for a log record).
    pub(crate) fn into_vec(self) -> Vec<u8> {
        match self {
            Payload::Bytes(v) => v,
            Payload::Zeros(n) => vec![0; n],
        }
    }
}

pub(crate) struct Piece {
    pub start: u64,
    pub end: u64,
    pub ios: Vec<SubIo>,
}

impl ZoneRt {
    /// Starts stripe `s` (nothing of it submitted), keeping the allocations.
    pub fn start_stripe(&mut self, s: u64) {
        self.buf.clear();
        self.buf_stripe = s;
        self.filled = 0;
        self.par_prefix = 0;
    }

    /// Folds `data` (the next blocks of the stripe) into the running parity,
    /// and into the stripe buffer when `keep`.
    fn absorb(&mut self, lba_bytes: usize, chunk_bytes: usize, data: &[u8], keep: bool) {
        let mut at = self.filled as usize * lba_bytes;
        if keep {
            self.buf.extend_from_slice(data);
        }
        self.filled += (data.len() / lba_bytes) as u64;
        if self.par.len() != chunk_bytes {
            self.par = vec![0u8; chunk_bytes];
        }
        let mut src = data;
        while !src.is_empty() {
            let in_chunk = at % chunk_bytes;
            let n = (chunk_bytes - in_chunk).min(src.len());
            let dst = &mut self.par[in_chunk..in_chunk + n];
            if at < chunk_bytes {
                dst.copy_from_slice(&src[..n]);
            } else {
                xor_into(dst, &src[..n]);
            }
            at += n;
            src = &src[n..];
        }
    }

    /// Loads the submitted prefix `data` of the current stripe (recovery):
    /// running parity, fill, and the buffer itself when `keep`.
    pub fn load_stripe(&mut self, lba_bytes: usize, chunk_bytes: usize, data: Vec<u8>, keep: bool) {
        self.par.clear();
        self.par.resize(chunk_bytes, 0);
        for chunk in data.chunks(chunk_bytes) {
            xor_into(&mut self.par, chunk);
        }
        self.filled = (data.len() / lba_bytes) as u64;
        self.buf = if keep { data } else { Vec::new() };
    }

    /// Partial parity "XOR of data chunks 0..=m" of the current stripe at
    /// in-chunk blocks [x, y): the running parity, minus what chunks after m
    /// already hold there — which can only be data of the piece being
    /// planned (`piece`: its bytes, from stripe byte offset `piece_at`), as a
    /// write covers the chunks it ends in from their start. `out` is an empty
    /// buffer to fill (from the array's pool).
    #[allow(clippy::too_many_arguments)]
    fn parity_through(
        &self,
        mut out: Vec<u8>,
        lba_bytes: usize,
        chunk_lbas: u64,
        m: u32,
        x: u64,
        y: u64,
        piece_at: usize,
        piece: &[u8],
    ) -> Vec<u8> {
        let cb = chunk_lbas as usize * lba_bytes;
        let (xb, yb) = (x as usize * lba_bytes, y as usize * lba_bytes);
        out.clear();
        out.extend_from_slice(&self.par[xb..yb]);
        let end = piece_at + piece.len();
        let mut i = m as usize + 1;
        while i * cb + xb < end {
            let from = (i * cb + xb).max(piece_at);
            let to = (i * cb + yb).min(end);
            if from < to {
                let o = from - (i * cb + xb);
                xor_into(&mut out[o..], &piece[from - piece_at..to - piece_at]);
            }
            i += 1;
        }
        out
    }
}

impl Inner {
    /// Splits a write at zone offset `off` into pieces, updating the stripe buffer.
    pub(crate) fn plan(&self, st: &mut State, zone: u32, off: u64, data: &[u8]) -> Vec<Piece> {
        let l = self.layout;
        let b = self.lba_bytes();
        let sl = l.stripe_lbas();
        let c = l.chunk_lbas;
        let nd = l.data_chunks() as u32;
        let nlb = (data.len() / b) as u64;
        let end = off + nlb;
        let array_id = self.array_id.get();
        let keep = self.opts.variant.pp_log_zone();
        let timing_only = self.opts.timing_only;
        // "XOR of data chunks 0..=m at in-chunk blocks [x, y)" of the stripe
        // being filled (zeros of that size in a timing-only array)
        let parity = |z: &ZoneRt, m: u32, x: u64, y: u64, rel: usize, src: &[u8]| {
            if timing_only {
                Payload::Zeros((y - x) as usize * b)
            } else {
                Payload::Bytes(z.parity_through(self.take_buf(), b, c, m, x, y, rel, src))
            }
        };
        let mut pieces = Vec::with_capacity(((end - 1) / sl - off / sl + 1) as usize);
        let mut s = off / sl;
        while s * sl < end {
            let a = off.max(s * sl);
            let e = end.min((s + 1) * sl);
            let mut ios = Vec::with_capacity(4);
            let z = &mut st.z[zone as usize];
            if z.buf_stripe != s {
                z.start_stripe(s);
            }
            // writes and appends go to the write pointer: the piece starts
            // where the stripe's submitted prefix ends
            debug_assert_eq!(a - s * sl, z.filled, "piece not at the stripe's fill");
            let rel = ((a - s * sl) as usize) * b;
            let src = &data[((a - off) as usize) * b..((e - off) as usize) * b];
            if timing_only {
                z.filled += e - a;
            } else {
                z.absorb(b, c as usize * b, src, keep);
            }
            // data sub-I/Os, one per chunk portion
            let mut x = a;
            while x < e {
                let loc = l.locate(x);
                let len = (c - loc.in_chunk).min(e - x);
                let from = ((x - off) as usize) * b;
                ios.push(SubIo::Data {
                    dev: l.data_dev(zone, s, loc.idx),
                    off: l.member_off(s, loc.in_chunk),
                    range: from..from + len as usize * b,
                    gate: Gate::Row(s),
                });
                st.stats.data_blocks += len;
                x += len;
            }
            let z = &mut st.z[zone as usize];
            if e == (s + 1) * sl {
                // full parity (what is not already written in place)
                let p0 = z.par_prefix;
                let fp = parity(z, nd - 1, p0, c, rel, src);
                ios.push(SubIo::Write {
                    dev: l.parity_dev(zone, s),
                    off: l.member_off(s, p0),
                    data: fp,
                    gate: Gate::Row(s),
                });
                st.stats.parity_blocks += c - p0;
                z.start_stripe(s + 1);
            } else {
                // the write ends inside stripe s: partial parity
                let sa = l.locate(a);
                let se = l.locate(e - 1);
                let e_off = (e - 1) % c + 1;
                // (m, from, to): at most two, kept inline (no allocation)
                let from_a = if sa.idx == se.idx { sa.in_chunk } else { 0 };
                let mut pps = [(se.idx, from_a, e_off), (0, 0, 0)];
                let mut n_pps = 1;
                if e_off < c && sa.idx < se.idx {
                    let from_b = if sa.idx + 1 == se.idx { sa.in_chunk } else { 0 };
                    pps[1] = (se.idx - 1, from_b, c);
                    n_pps = 2;
                }
                for &(m, x0, y0) in &pps[..n_pps] {
                    if self.opts.variant.pp_log_zone() {
                        // RAIZN: every PP is appended to the PP log zone of
                        // the stripe's parity member (permanent)
                        let pp = parity(z, m, x0, y0, rel, src);
                        st.seq += 1;
                        ios.push(SubIo::PpLog {
                            dev: l.parity_dev(zone, s),
                            rec: Record {
                                kind: RecordKind::Pp,
                                array_id,
                                zone,
                                gen: z.gen,
                                seq: st.seq,
                                f: [s, m as u64, x0, y0 - x0, 0, 0],
                                payload: Vec::new(),
                            },
                            pp,
                        });
                        continue;
                    }
                    if m == nd - 1 {
                        // last data chunk: its partial parity goes in place
                        let x0 = x0.min(z.par_prefix);
                        let pp = parity(z, m, x0, y0, rel, src);
                        ios.push(SubIo::Write {
                            dev: l.parity_dev(zone, s),
                            off: l.member_off(s, x0),
                            data: pp,
                            gate: Gate::Row(s),
                        });
                        z.par_prefix = z.par_prefix.max(y0);
                        st.stats.parity_blocks += y0 - x0;
                        continue;
                    }
                    let pp = parity(z, m, x0, y0, rel, src);
                    match l.slot_row(s) {
                        Some(row) => {
                            ios.push(SubIo::Write {
                                dev: l.pp_dev(zone, s, m),
                                off: l.member_off(row, x0),
                                data: pp,
                                gate: Gate::Slot,
                            });
                            st.stats.pp_zrwa_blocks += y0 - x0;
                        }
                        None => {
                            st.seq += 1;
                            ios.push(SubIo::Md {
                                dev: l.parity_dev(zone, s),
                                rec: Record {
                                    kind: RecordKind::Pp,
                                    array_id,
                                    zone,
                                    gen: z.gen,
                                    seq: st.seq,
                                    f: [s, m as u64, x0, y0 - x0, 0, 0],
                                    payload: pp.into_vec(),
                                },
                            });
                            st.stats.pp_md_blocks += y0 - x0;
                        }
                    }
                }
            }
            pieces.push(Piece {
                start: a,
                end: e,
                ios,
            });
            s += 1;
        }
        pieces
    }
}

/// `dst ^= src` over their common length: 64-byte blocks (fixed-size, so
/// the compiler unrolls them into vector operations with one loop step per
/// block), then the remaining bytes.
pub(crate) fn xor_into(dst: &mut [u8], src: &[u8]) {
    const BLOCK_BYTES: usize = 64;
    let n = dst.len().min(src.len());
    let (dst, src) = (&mut dst[..n], &src[..n]);
    let mut d_blocks = dst.chunks_exact_mut(BLOCK_BYTES);
    let mut s_blocks = src.chunks_exact(BLOCK_BYTES);
    for (d, s) in (&mut d_blocks).zip(&mut s_blocks) {
        // always exact blocks: the conversions only tell the compiler the length
        if let (Ok(d), Ok(s)) = (
            <&mut [u8; BLOCK_BYTES]>::try_from(d),
            <&[u8; BLOCK_BYTES]>::try_from(s),
        ) {
            for (d, s) in d.iter_mut().zip(s) {
                *d ^= *s;
            }
        }
    }
    for (d, s) in d_blocks
        .into_remainder()
        .iter_mut()
        .zip(s_blocks.remainder())
    {
        *d ^= *s;
    }
}

#[cfg(test)]
mod tests {
    use super::xor_into;

    /// The blocked XOR equals a byte-by-byte XOR for every length and
    /// alignment around the block size, over the common length only.
    #[test]
    fn xor_into_matches_bytewise() {
        for dst_len in [0usize, 1, 63, 64, 65, 127, 128, 200, 8192] {
            for src_len in [0usize, 1, 64, 100, 8192 + 3] {
                for skew in [0usize, 1, 7] {
                    let src: Vec<u8> = (0..src_len + skew).map(|i| (i * 31 + 7) as u8).collect();
                    let mut dst: Vec<u8> =
                        (0..dst_len + skew).map(|i| (i * 17 + 3) as u8).collect();
                    let mut want = dst.clone();
                    let n = dst_len.min(src_len);
                    for i in 0..n {
                        want[skew + i] ^= src[skew + i];
                    }
                    xor_into(&mut dst[skew..], &src[skew..]);
                    assert_eq!(dst, want, "dst {dst_len} src {src_len} skew {skew}");
                }
            }
        }
    }
}
