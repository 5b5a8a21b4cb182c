//! Service times of the write and append engines: what one command of a
//! size costs them — a base, the extra of a request below one host
//! transfer granule (read-modify-write; for writes partly done in the
//! background), and a cost per further granule. Functions of the profile
//! alone.

use super::profile::TimingProfile;

/// A zoned write's engine time: (what the write waits for, what the engine
/// does after the data is admitted). A write pays per host transfer
/// granule, and the sub-granule (read-modify-write) extra; with
/// `write_granules_by_lba` by the granules it touches: an 8 KiB write at a
/// 4 KiB offset touches two, both partial (issue 16: mq-deadline's merged
/// requests start wherever the previous dispatch ended).
pub(super) fn write_ns(p: &TimingProfile, off: u64, bytes: u64) -> (u64, u64) {
    let (spanned, partial) = granules(p, off, bytes);
    let svc = p.write_engine_ns
        + if partial {
            p.write_engine_small_extra_ns
        } else {
            0
        }
        + p.write_engine_per_extra_unit_ns
            .saturating_mul(spanned.saturating_sub(1));
    // Background part of a sub-granule write's extra: the engine does it
    // after the data is admitted, the completion does not wait for it.
    let bg = if partial {
        p.write_engine_small_background_ns
    } else {
        0
    };
    (svc - bg, bg)
}

/// A zone append's engine time.
pub(super) fn append_ns(p: &TimingProfile, bytes: u64) -> u64 {
    let small = if bytes < p.host_xfer_unit_bytes {
        p.append_engine_small_extra_ns
    } else {
        0
    };
    let extra_units = bytes.div_ceil(p.host_xfer_unit_bytes).saturating_sub(1);
    p.append_engine_ns
        + small
        + p.append_engine_per_extra_unit_ns
            .saturating_mul(extra_units)
}

/// Host transfer granules a write of `bytes` at zone offset `off`
/// touches, and whether its first or last one is only partly written.
#[inline]
fn granules(p: &TimingProfile, off: u64, bytes: u64) -> (u64, bool) {
    let g = p.host_xfer_unit_bytes;
    if !p.write_granules_by_lba {
        return (bytes.div_ceil(g).max(1), bytes < g);
    }
    let end = off.saturating_add(bytes.max(1));
    let spanned = end.div_ceil(g) - off / g;
    (spanned, off % g != 0 || end % g != 0)
}
