//! Opening an array after power loss or a restart (`open`: recovery, paper
//! §4.5 and §5.3), and rebuilding a failed member onto a spare (`rebuild`).
//! Building one is `create`'s.
//!
//! Recovery per logical zone: the zone's generation comes from the reset
//! records of the metadata zones (an unfinished reset is completed); a finish
//! record makes it Full; otherwise the progress is the largest chunk count any
//! surviving member write pointer claims (`Layout::claim`), raised by the
//! newest valid WP-log entry (in the WP-log slots of the stripes around that
//! progress, and in the metadata zones near the zone end). Member write
//! pointers are then advanced to the targets of that progress, and the stripe
//! buffer of the partial stripe is reloaded from the media — with a failed
//! member, its chunk is rebuilt from the partial parity (Rule 1 slots, the
//! in-place parity of the last chunk, or the metadata-zone PP records).

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use zns_core::{
    IoFlags, NvmeError, NvmeStatus, ReportFilter, ZoneAction, ZoneDescriptor, ZoneRecord,
    ZoneSendCmd, ZoneSet, ZoneState, ZonedDevice,
};
use zns_sim::Handle;

use crate::create::{describe_difference, dev_err, new_inner, validate};
use crate::engine::{advance, log_wp, md_append};
use crate::md::{Record, RecordKind, WpEntry};
use crate::media::{partial_stripe_data, read_md_records, read_partial_stripe, read_range};
use crate::plan::xor_into;
use crate::state::{Inner, MdMember, ZonePhase};
use crate::superblock::{gen_table, superblock};
use crate::{Policy, RaidArray, RaidError, RaidOptions};

/// What the metadata zones say about one logical zone.
#[derive(Default)]
struct ZoneMd {
    gen: u64,
    reset_started: HashSet<u64>,
    reset_done: HashSet<u64>,
    finish: HashMap<u64, u64>,
    wp_end: HashMap<u64, u64>,
    pp: Vec<Record>,
}

impl RaidArray {
    /// Opens an existing array (after a restart or a power loss) and recovers
    /// every zone. Members must be given in their original order; one of them
    /// may have failed (its commands return Host Pathing Error).
    pub async fn open(
        handle: &Handle,
        members: Vec<Rc<dyn ZonedDevice>>,
        opts: RaidOptions,
    ) -> Result<RaidArray, RaidError> {
        if opts.variant != crate::Variant::Zraid {
            return Err(RaidError::Unsupported {
                variant: opts.variant,
                what: "opening an existing array",
            });
        }
        let (layout, cfg) = validate(&members, &opts)?;
        let n = members.len();
        let mcfg = members[0].config().clone();
        let mut descs: Vec<Option<Vec<ZoneDescriptor>>> = Vec::new();
        for (i, m) in members.iter().enumerate() {
            match m
                .report_zones(0, ReportFilter::All, mcfg.zone_count as usize)
                .await
            {
                Ok(d) => descs.push(Some(d)),
                Err(e) if e.status == NvmeStatus::HostPathingError => descs.push(None),
                Err(e) => {
                    return Err(RaidError::Device {
                        member: i,
                        error: e,
                    })
                }
            }
        }
        let failed: Vec<usize> = (0..n).filter(|&i| descs[i].is_none()).collect();
        if failed.len() > 1 {
            return Err(RaidError::TooManyFailed { failed });
        }
        let inner = new_inner(handle, members, layout, cfg.clone(), opts, 0)?;
        for &f in &failed {
            inner.failed.borrow_mut()[f] = true;
        }
        // ---- metadata zones
        let mut array_id: Option<u64> = None;
        let mut zmd: Vec<ZoneMd> = (0..cfg.zone_count).map(|_| ZoneMd::default()).collect();
        let mut max_seq = 0u64;
        let mut sb_found = false;
        for (dev, d) in descs.iter().enumerate() {
            let Some(d) = d else { continue };
            let mut best: Option<(u64, u32)> = None;
            let first_md = (mcfg.zone_count - 2) as usize;
            let md = [d[first_md], d[first_md + 1]];
            let recs = read_md_records(&inner, dev as u32, md)
                .await
                .map_err(dev_err(dev))?;
            for (which, rec) in recs {
                if rec.kind == RecordKind::Superblock {
                    if rec.f[0] != n as u64
                        || rec.f[1] != dev as u64
                        || rec.f[2] != layout.chunk_lbas
                    {
                        return Err(RaidError::NotAnArray(format!(
                            "member {dev}: superblock says {} members, member index {}, chunk {} LBAs; expected {n}, {dev}, {}",
                            rec.f[0], rec.f[1], rec.f[2], layout.chunk_lbas
                        )));
                    }
                    match array_id {
                        None => array_id = Some(rec.array_id),
                        Some(a) if a != rec.array_id => {
                            return Err(RaidError::NotAnArray(format!(
                                "member {dev} belongs to another array"
                            )))
                        }
                        _ => {}
                    }
                    sb_found = true;
                    if best.is_none_or_lt(rec.f[3]) {
                        best = Some((rec.f[3], which));
                    }
                    continue;
                }
                if Some(rec.array_id) != array_id {
                    continue;
                }
                max_seq = max_seq.max(rec.seq);
                apply_record(&mut zmd, rec);
            }
            if let Some((epoch, which)) = best {
                inner.st.borrow_mut().md[dev] = MdMember {
                    cur: which,
                    epoch,
                    switching: false,
                };
            }
        }
        if !sb_found {
            return Err(RaidError::NotAnArray(
                "no superblock in the members' metadata zones".into(),
            ));
        }
        let array_id = array_id.unwrap_or(0);
        inner.array_id.set(array_id);
        for (zi, zm) in zmd.iter().enumerate() {
            inner.st.borrow_mut().z[zi].gen = zm.gen;
        }
        inner.st.borrow_mut().seq = max_seq;
        // ---- zones
        let mut records = Vec::new();
        for zone in 0..cfg.zone_count {
            let member_descs: Vec<Option<ZoneDescriptor>> = descs
                .iter()
                .map(|d| d.as_ref().map(|v| v[zone as usize]))
                .collect();
            let rec = recover_zone(&inner, zone, &zmd[zone as usize], &member_descs)
                .await
                .map_err(dev_err(usize::MAX))?;
            records.push(rec);
        }
        let zones = ZoneSet::from_snapshot(cfg, &records)
            .map_err(|e| RaidError::NotAnArray(e.to_string()))?;
        inner.st.borrow_mut().zones = zones;
        let seq = inner.st.borrow().seq;
        inner.st.borrow_mut().seq = seq + 1;
        Ok(RaidArray { inner })
    }

    /// Rebuilds failed member `index` onto `spare` (a device with the same
    /// geometry): every written zone's chunks are reconstructed from the
    /// surviving members (XOR of the row; the partial stripe from the stripe
    /// buffer), partial parity and WP-log slots are rewritten, and the spare's
    /// write pointers are set as the original's were. The spare then replaces
    /// the member. Commands issued while it runs wait until it is done (the
    /// commands already running finish first): the array is offline for the
    /// rebuild's duration, never wrong.
    pub async fn rebuild(&self, index: usize, spare: Rc<dyn ZonedDevice>) -> Result<(), RaidError> {
        let inner = &self.inner;
        let l = inner.layout;
        if inner.opts.variant != crate::Variant::Zraid {
            return Err(RaidError::Unsupported {
                variant: inner.opts.variant,
                what: "rebuild",
            });
        }
        if index >= inner.n() || !inner.failed.borrow()[index] {
            return Err(RaidError::Rebuild(format!(
                "member {index} is not a failed member of this array"
            )));
        }
        if *spare.config() != inner.member_cfg {
            return Err(RaidError::MixedGeometry {
                member: index,
                detail: describe_difference(&inner.member_cfg, spare.config()),
            });
        }
        // new commands wait until the rebuild is done (the spare's zones are
        // rebuilt one by one); those already running finish first
        let Some(_hold) = inner.gate.close().await else {
            return Err(RaidError::Rebuild(
                "another rebuild is running on this array".into(),
            ));
        };
        self.quiesce().await;
        if let Some(e) = inner.st.borrow().poisoned {
            return Err(RaidError::Rebuild(format!("array is stopped: {e}")));
        }
        let err = dev_err(index);
        // the partial stripe of every written zone, the failed member's chunk
        // rebuilt from the partial parity (before the spare replaces it)
        let mut partials: Vec<Option<Vec<u8>>> = Vec::new();
        for zone in 0..inner.cfg.zone_count {
            let d = {
                let st = inner.st.borrow();
                let desc = st.zones.descriptor(zone).expect("zone in range");
                match desc.state {
                    ZoneState::Empty => 0,
                    ZoneState::Full => {
                        st.zones.write_pointer(zone).unwrap_or(desc.start_lba)
                            - inner.logical_zone_start(zone)
                    }
                    _ => st.z[zone as usize].frontier,
                }
            };
            partials.push(if d % l.stripe_lbas() > 0 {
                Some(
                    partial_stripe_data(inner, zone, d).await.map_err(|e| {
                        RaidError::Rebuild(format!("zone {zone}: partial stripe: {e}"))
                    })?,
                )
            } else {
                None
            });
        }
        spare
            .zone_send(ZoneSendCmd {
                action: ZoneAction::Reset,
                slba: 0,
                select_all: true,
            })
            .await
            .map_err(&err)?;
        // install the spare: from now on the array writes to it
        inner.members.borrow_mut()[index] = spare.clone();
        inner.failed.borrow_mut()[index] = false;
        inner.st.borrow_mut().md[index] = MdMember {
            cur: 0,
            epoch: 1,
            switching: false,
        };
        let dev = index as u32;
        md_append(inner, dev, superblock(inner, dev, 1))
            .await
            .map_err(&err)?;
        md_append(inner, dev, gen_table(inner))
            .await
            .map_err(&err)?;
        let b = inner.lba_bytes();
        let c = l.chunk_lbas;
        let sl = l.stripe_lbas();
        let nd = l.data_chunks() as u32;
        // full zones first: one finished inside a stripe borrows a ZRWA for a
        // moment, which must not find the open zones holding them all
        let mut zone_order: Vec<u32> = (0..inner.cfg.zone_count).collect();
        {
            let st = inner.st.borrow();
            // stable: zone order within each group
            zone_order
                .sort_by_key(|&z| st.zones.descriptor(z).map(|d| d.state) != Some(ZoneState::Full));
        }
        for zone in zone_order {
            let (state, internal_wp, d, gen) = {
                let st = inner.st.borrow();
                let desc = st.zones.descriptor(zone).expect("zone in range");
                let z = &st.z[zone as usize];
                (
                    desc.state,
                    st.zones.write_pointer(zone).unwrap_or(desc.start_lba),
                    z.frontier,
                    z.gen,
                )
            };
            let zstart = inner.mzone_start(zone);
            if state == ZoneState::Empty {
                continue;
            }
            let full = state == ZoneState::Full;
            let d = if full {
                internal_wp - inner.logical_zone_start(zone)
            } else {
                d
            };
            let s_full = d / sl;
            let r = d % sl;
            // written through a ZRWA as the original was: an open zone, and a
            // zone finished inside a stripe (its partial parity slots lie
            // ahead of the partial row; Finish commits them)
            let zrwa = !full || r > 0;
            if zrwa {
                spare
                    .zone_send(ZoneSendCmd {
                        action: ZoneAction::Open { zrwa: true },
                        slba: zstart,
                        select_all: false,
                    })
                    .await
                    .map_err(&err)?;
                inner.st.borrow_mut().z[zone as usize].member_wp[index] = 0;
            }
            let target = if full {
                l.member_zone_cap
            } else {
                l.targets(zone, d, inner.opts.policy).0[index]
            };
            // complete rows: XOR of the other members
            for row in 0..s_full {
                let mut chunk = vec![0u8; c as usize * b];
                for other in 0..l.n {
                    if other == dev {
                        continue;
                    }
                    let part = read_range(inner, other, zstart + row * c, c)
                        .await
                        .map_err(dev_err(other as usize))?;
                    xor_into(&mut chunk, &part);
                }
                spare
                    .write(zstart + row * c, &chunk, IoFlags::NONE)
                    .await
                    .map_err(&err)?;
                if zrwa {
                    advance(inner, zone, gen, dev, ((row + 1) * c).min(target))
                        .await
                        .map_err(&err)?;
                }
            }
            // the partial stripe, read (and rebuilt from PP) above
            let buf = partials[zone as usize].take().unwrap_or_default();
            if r > 0 && buf.len() >= (r as usize) * b {
                let j = (r / c) as u32;
                let e = r % c;
                let q = l.seq_of(zone, s_full, dev);
                let content: Option<Vec<u8>> = if q < nd {
                    let len = if q < j {
                        c
                    } else if q == j {
                        e
                    } else {
                        0
                    };
                    let from = q as usize * c as usize * b;
                    (len > 0).then(|| buf[from..from + len as usize * b].to_vec())
                } else if j == nd - 1 && e > 0 {
                    Some(xor_range(&buf, c, b, nd - 1, 0, e))
                } else {
                    None
                };
                if let Some(data) = content {
                    spare
                        .write(zstart + s_full * c, &data, IoFlags::NONE)
                        .await
                        .map_err(&err)?;
                }
                // partial parity this member holds: "XOR through chunk j"
                // over [0, e) and through chunk j − 1 (the last data
                // chunk's is in place, above)
                let mut pps = Vec::new();
                if e > 0 && j + 1 < nd {
                    pps.push((j, e));
                }
                if j >= 1 {
                    pps.push((j - 1, c));
                }
                match l.slot_row(s_full) {
                    // in its Rule-1 slot when it is the member of chunk m + 1
                    Some(row) => {
                        for (m, len) in pps {
                            if l.pp_dev(zone, s_full, m) == dev {
                                let pp = xor_range(&buf, c, b, m, 0, len);
                                spare
                                    .write(zstart + l.member_off(row, 0), &pp, IoFlags::NONE)
                                    .await
                                    .map_err(&err)?;
                            }
                        }
                    }
                    // near the zone end, as PP records in the metadata
                    // zone when it is the stripe's parity member
                    None if l.parity_dev(zone, s_full) == dev => {
                        for (m, len) in pps {
                            let rec = Record {
                                kind: RecordKind::Pp,
                                array_id: inner.array_id.get(),
                                zone,
                                gen,
                                seq: inner.next_seq(),
                                f: [s_full, u64::from(m), 0, len, 0, 0],
                                payload: xor_range(&buf, c, b, m, 0, len),
                            };
                            md_append(inner, dev, rec).await.map_err(&err)?;
                        }
                    }
                    None => {}
                }
            }
            if full {
                if l.rows * c < l.member_zone_cap || d < l.logical_cap() {
                    spare
                        .zone_send(ZoneSendCmd {
                            action: ZoneAction::Finish,
                            slba: zstart,
                            select_all: false,
                        })
                        .await
                        .map_err(&err)?;
                }
                inner.st.borrow_mut().z[zone as usize].member_wp[index] = l.member_zone_cap;
                continue;
            }
            advance(inner, zone, gen, dev, target).await.map_err(&err)?;
            if inner.opts.policy != Policy::Stripe && d > 0 {
                inner.st.borrow_mut().z[zone as usize].logged_end = 0;
                log_wp(inner, zone, gen, d).await.map_err(&err)?;
            }
        }
        Ok(())
    }
}

/// XOR of chunks 0..=m of a stripe buffer at in-chunk blocks [x, y).
fn xor_range(buf: &[u8], c: u64, b: usize, m: u32, x: u64, y: u64) -> Vec<u8> {
    let mut out = vec![0u8; (y - x) as usize * b];
    for i in 0..=m as usize {
        let from = (i * c as usize + x as usize) * b;
        let len = out.len();
        xor_into(&mut out, &buf[from..from + len]);
    }
    out
}

trait NoneOrLt {
    fn is_none_or_lt(&self, v: u64) -> bool;
}
impl NoneOrLt for Option<(u64, u32)> {
    fn is_none_or_lt(&self, v: u64) -> bool {
        match self {
            None => true,
            Some((e, _)) => *e < v,
        }
    }
}

fn apply_record(zmd: &mut [ZoneMd], rec: Record) {
    if rec.kind == RecordKind::GenTable {
        for (i, chunk) in rec.payload.chunks_exact(8).enumerate() {
            if let Some(z) = zmd.get_mut(i) {
                let g = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
                z.gen = z.gen.max(g);
                // a generation in the table was reset completely
                z.reset_done.insert(g);
            }
        }
        return;
    }
    let Some(z) = zmd.get_mut(rec.zone as usize) else {
        return;
    };
    match rec.kind {
        RecordKind::Reset => {
            z.gen = z.gen.max(rec.gen);
            z.reset_started.insert(rec.gen);
        }
        RecordKind::ResetDone => {
            z.gen = z.gen.max(rec.gen);
            z.reset_done.insert(rec.gen);
        }
        RecordKind::Finish => {
            let e = z.finish.entry(rec.gen).or_insert(0);
            *e = (*e).max(rec.f[0]);
        }
        RecordKind::WpLog => {
            let e = z.wp_end.entry(rec.gen).or_insert(0);
            *e = (*e).max(rec.f[0]);
        }
        RecordKind::Pp => z.pp.push(rec),
        RecordKind::Superblock | RecordKind::GenTable => {}
    }
}

async fn reset_member_zone(inner: &Rc<Inner>, zone: u32) -> Result<(), NvmeError> {
    for dev in 0..inner.layout.n {
        if !inner.member_zone_send(dev, zone, ZoneAction::Reset).await? {
            continue;
        }
        inner.st.borrow_mut().z[zone as usize].member_wp[dev as usize] = 0;
    }
    Ok(())
}

async fn recover_zone(
    inner: &Rc<Inner>,
    zone: u32,
    zm: &ZoneMd,
    descs: &[Option<ZoneDescriptor>],
) -> Result<ZoneRecord, NvmeError> {
    let l = inner.layout;
    let start = inner.logical_zone_start(zone);
    let cap = l.logical_cap();
    let gen = zm.gen;
    let record = |state, wp: u64, early: bool| ZoneRecord {
        state,
        write_pointer: start + wp,
        zrwa: false,
        finished_early: early,
        finished_by_controller: false,
    };
    let mut any_written = false;
    for (dev, d) in descs.iter().enumerate() {
        if let Some(d) = d {
            let wp = if d.state == ZoneState::Full {
                l.member_zone_cap
            } else {
                d.write_pointer - d.start_lba
            };
            inner.st.borrow_mut().z[zone as usize].member_wp[dev] = wp;
            if d.state != ZoneState::Empty {
                any_written = true;
            }
        }
    }
    if zm.reset_started.contains(&gen) && !zm.reset_done.contains(&gen) {
        // a reset was cut short: finish it
        reset_member_zone(inner, zone).await?;
        for dev in 0..l.n {
            let rec = Record {
                kind: RecordKind::ResetDone,
                array_id: inner.array_id.get(),
                zone,
                gen,
                seq: inner.st.borrow().seq + 1,
                f: [0; 6],
                payload: Vec::new(),
            };
            md_append(inner, dev, rec).await?;
        }
        return Ok(record(ZoneState::Empty, 0, false));
    }
    if let Some(&end) = zm.finish.get(&gen) {
        for dev in 0..l.n {
            if inner.member(dev).is_none() {
                continue;
            }
            if descs[dev as usize].is_some_and(|d| d.state != ZoneState::Full) {
                inner
                    .member_zone_send(dev, zone, ZoneAction::Finish)
                    .await?;
            }
            inner.st.borrow_mut().z[zone as usize].member_wp[dev as usize] = l.member_zone_cap;
        }
        let end = end.min(cap);
        let mut st = inner.st.borrow_mut();
        let z = &mut st.z[zone as usize];
        z.phase = ZonePhase::Ready;
        z.set_progress(end, l.chunk_lbas);
        // a zone finished inside a stripe: degraded reads of that stripe
        // rebuild it from partial parity (the bytes are not reloaded)
        z.start_stripe(end / l.stripe_lbas());
        z.filled = end % l.stripe_lbas();
        return Ok(if end >= cap {
            record(ZoneState::Full, cap, false)
        } else {
            record(ZoneState::Full, end, true)
        });
    }
    // progress claimed by the member write pointers
    let mut k = 0;
    for (dev, d) in descs.iter().enumerate() {
        if d.is_some() {
            let wp = inner.st.borrow().z[zone as usize].member_wp[dev];
            k = k.max(l.claim(zone, dev as u32, wp));
        }
    }
    let dp = k * l.chunk_lbas;
    let mut d = dp;
    if inner.opts.policy == Policy::Stripe {
        d = dp / l.stripe_lbas() * l.stripe_lbas();
    } else if any_written {
        d = d.max(scan_wplogs(inner, zone, gen, dp, zm).await?);
    }
    let d = d.min(cap);
    if d == 0 {
        if any_written {
            reset_member_zone(inner, zone).await?;
        }
        return Ok(record(ZoneState::Empty, 0, false));
    }
    {
        let mut st = inner.st.borrow_mut();
        let z = &mut st.z[zone as usize];
        z.phase = ZonePhase::Ready;
        z.set_progress(d, l.chunk_lbas);
        // a zone with room left comes back closed: its member zones are
        // active
        if d < cap {
            Inner::hold_members(&mut st, zone);
        }
    }
    if d < cap {
        reload_stripe(inner, zone, d, zm).await?;
    }
    let (t, pair) = l.targets(zone, d, inner.opts.policy);
    for dev in pair
        .iter()
        .copied()
        .chain((0..l.n).filter(|x| !pair.contains(x)))
    {
        advance(inner, zone, gen, dev, t[dev as usize]).await?;
    }
    if d >= cap {
        if l.rows * l.chunk_lbas < l.member_zone_cap {
            for dev in 0..l.n {
                if !inner
                    .member_zone_send(dev, zone, ZoneAction::Finish)
                    .await?
                {
                    continue;
                }
            }
        }
        return Ok(record(ZoneState::Full, cap, false));
    }
    Ok(record(ZoneState::Closed, d, false))
}

/// The largest end of a valid WP-log entry of the zone's generation, in the
/// WP-log slots of the stripes around progress `dp` and in the metadata zones.
async fn scan_wplogs(
    inner: &Rc<Inner>,
    zone: u32,
    gen: u64,
    dp: u64,
    zm: &ZoneMd,
) -> Result<u64, NvmeError> {
    let l = inner.layout;
    let sl = l.stripe_lbas();
    let cap = l.logical_cap();
    let mut best = zm.wp_end.get(&gen).copied().unwrap_or(0);
    let s_lo = (dp / sl).saturating_sub(1);
    let s_hi = (dp / sl + l.h + 1).min(l.rows - 1);
    let b = inner.lba_bytes();
    for s in s_lo..=s_hi {
        let Some(row) = l.slot_row(s) else { continue };
        for dev in l.wplog_devs(zone, s) {
            if inner.member(dev).is_none() {
                continue;
            }
            let bytes = read_range(
                inner,
                dev,
                inner.mzone_start(zone) + l.member_off(row, 0),
                l.wplog_slots(),
            )
            .await?;
            for block in bytes.chunks_exact(b) {
                let Some(e) = WpEntry::decode(block) else {
                    continue;
                };
                if e.array_id == inner.array_id.get()
                    && e.zone == zone
                    && e.gen == gen
                    && e.end > s * sl
                    && e.end <= ((s + 1) * sl).min(cap)
                {
                    best = best.max(e.end);
                    let mut st = inner.st.borrow_mut();
                    st.seq = st.seq.max(e.seq);
                }
            }
        }
    }
    Ok(best)
}

/// Reloads the partial stripe at progress `d` (running parity, fill, and the
/// stripe buffer for the variants that keep one).
async fn reload_stripe(inner: &Rc<Inner>, zone: u32, d: u64, zm: &ZoneMd) -> Result<(), NvmeError> {
    let l = inner.layout;
    let b = inner.lba_bytes();
    let sl = l.stripe_lbas();
    let s = d / sl;
    let r = d - s * sl;
    if r == 0 {
        inner.st.borrow_mut().z[zone as usize].start_stripe(s);
        return Ok(());
    }
    let data = read_partial_stripe(inner, zone, d, &zm.pp).await?;
    let keep = inner.opts.variant.pp_log_zone();
    let (j, e) = ((r / l.chunk_lbas) as u32, r % l.chunk_lbas);
    let mut st = inner.st.borrow_mut();
    let z = &mut st.z[zone as usize];
    z.start_stripe(s);
    z.load_stripe(b, l.chunk_lbas as usize * b, data, keep);
    z.par_prefix = if j == l.data_chunks() as u32 - 1 {
        e
    } else {
        0
    };
    Ok(())
}
