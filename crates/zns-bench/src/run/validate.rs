//! A job checked against the device it targets before anything runs:
//! its block sizes against the LBA size, MDTS and ZRWA, its options against
//! the namespace's kind (the message names the option), its byte range,
//! and the concurrent zone writers that cannot share zones.

use std::rc::Rc;

use zns_target::{Geometry, Target};

use super::{JobRun, RunError};
use crate::job::{JobSpec, Rw, ZoneMode};

/// Concurrent jobs that change the same zones. zbd writers share them as
/// fio's jobs do (one zone state per device: `numjobs` clones and jobs with
/// overlapping ranges write at the same write pointers); what znskit adds
/// to fio cannot be shared, and is refused with the reason: zone_op jobs
/// (they time commands on zones they take for themselves), ZRWA writers
/// (a zone's ZRWA window and its flushes have one writer), verify= (a job
/// checks what it wrote, which another job's reset would discard) and
/// different zone_write_limit values (one limit per zone).
pub(super) fn check_shared_zone_writers(runs: &[Rc<JobRun>]) -> Result<(), RunError> {
    // (run, its clone number among the runs of the same job: numjobs)
    let writers: Vec<(&Rc<JobRun>, usize)> = runs
        .iter()
        .enumerate()
        .filter(|(_, r)| r.zbd_writes() || r.spec.zone_op.is_some())
        .map(|(i, r)| {
            let clone = runs[..i]
                .iter()
                .filter(|o| o.spec.name == r.spec.name)
                .count();
            (r, clone)
        })
        .collect();
    for (i, (a, ca)) in writers.iter().enumerate() {
        for (b, cb) in &writers[i + 1..] {
            let same_dev = a.spec.filename == b.spec.filename && a.spec.nsid == b.spec.nsid;
            let zb = a.geo.zone_bytes.max(1);
            let (a0, a1) = (a.start / zb, (a.start + a.len).div_ceil(zb));
            let (b0, b1) = (b.start / zb, (b.start + b.len).div_ceil(zb));
            if !(same_dev && a0 < b1 && b0 < a1) {
                continue;
            }
            let why = if a.spec.zone_op.is_some() || b.spec.zone_op.is_some() {
                "a zone_op job takes its zones for itself"
            } else if a.spec.zrwa || b.spec.zrwa {
                "a zone's ZRWA window and its flushes have one writer"
            } else if a.spec.verify.is_some() || b.spec.verify.is_some() {
                "verify= checks what a job wrote, which another job may reset"
            } else if a.spec.zone_write_limit != b.spec.zone_write_limit {
                "their zone_write_limit differ (one limit per zone)"
            } else {
                continue;
            };
            let zones = format!("zones {}..{}", a0.max(b0), a1.min(b1));
            let msg = if a.spec.name == b.spec.name {
                format!(
                    "clones {ca} and {cb} of job {} write the same {zones} at the same time, and {why}: add offset_increment= of at least the clone's size (e.g. offset_increment={}z with size={}z), or run the clones one after another",
                    a.spec.name,
                    a1 - a0,
                    a1 - a0
                )
            } else {
                format!(
                    "it and job {} write the same {zones} at the same time, and {why}: give them separate ranges (offset, or offset_increment with numjobs), or separate them with stonewall",
                    b.spec.name
                )
            };
            return Err(RunError::Setup {
                job: a.spec.name.clone(),
                msg,
            });
        }
    }
    Ok(())
}

/// Every I/O size the job can issue in the directions it does (a range's
/// smallest, largest and step), to check against the device.
pub(super) fn job_block_sizes(spec: &JobSpec) -> Vec<u64> {
    let mut sizes = Vec::new();
    if spec.rw.has_reads() {
        sizes.extend(spec.block_sizes.read.sizes_to_check());
    }
    if spec.rw.has_writes() {
        sizes.extend(spec.block_sizes.write.sizes_to_check());
    }
    if spec.rw.is_trim() {
        sizes.extend(spec.block_sizes.trim.sizes_to_check());
    }
    sizes
}

/// The largest I/O the job issues.
pub(super) fn max_block_bytes(spec: &JobSpec) -> u64 {
    job_block_sizes(spec).into_iter().max().unwrap_or(spec.bs)
}

/// Checks of a job against the device it targets; the message names the option.
pub(super) fn validate(spec: &JobSpec, target: &Target, geo: &Geometry) -> Result<(), String> {
    if spec.time_based && spec.runtime.is_none() {
        return Err(
            "time_based with no runtime (or runtime=0) would run for ever: set runtime=".into(),
        );
    }
    let zoned = target.zoned().is_some();
    let lba = geo.lba_bytes;
    if spec.untimed {
        let why = if zoned {
            Some("the namespace is zoned (untimed writes are for conventional namespaces)")
        } else if !matches!(spec.rw, Rw::Write | Rw::RandWrite) {
            Some("only write-only jobs (rw=write or randwrite) can be untimed")
        } else if spec.time_based {
            Some("time_based needs time: an untimed job stops at its size")
        } else if spec.rate.is_some() || spec.rate_iops.is_some() {
            Some("rate and rate_iops need time")
        } else if spec.verify.is_some() {
            Some("verify= reads back through timed I/O")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(format!("untimed=1: {why}"));
        }
    }
    if !spec.random_distribution.is_uniform()
        && spec.zonemode == ZoneMode::Zbd
        && spec.rw.is_random()
        && spec.rw.has_writes()
    {
        return Err(format!(
            "random_distribution={}: with zonemode=zbd random writes go to write pointers, not to the offsets a distribution draws; it applies to random reads here (rw=randread), or use zonemode=none on a conventional namespace or an FTL SSD",
            spec.random_distribution
        ));
    }
    if spec.rw.is_trim() {
        if zoned && (spec.zonemode != ZoneMode::Zbd || spec.rw == Rw::TrimWrite) {
            return Err(format!(
                "rw={}: a zoned namespace has no deallocate: with zonemode=zbd, rw=trim and randtrim reset whole zones (as fio's zbd mode does), or use zone_op=reset",
                spec.rw.as_str()
            ));
        }
        if spec.rate.is_some() || spec.rate_iops.is_some() {
            return Err(format!(
                "rw={}: rate and rate_iops limit reads and writes only here",
                spec.rw.as_str()
            ));
        }
    }
    for bytes in job_block_sizes(spec) {
        if bytes % lba != 0 {
            return Err(format!(
                "block size {bytes} (bs/bsrange/bssplit) is not a multiple of the device's {lba}-byte logical block"
            ));
        }
        if geo.max_transfer_bytes > 0 && bytes > geo.max_transfer_bytes {
            return Err(format!(
                "block size {bytes} (bs/bsrange/bssplit) exceeds the device's maximum transfer size (MDTS) of {} bytes",
                geo.max_transfer_bytes
            ));
        }
    }
    if !zoned {
        let zoned_only = [
            ("zonemode=zbd", spec.zonemode == ZoneMode::Zbd),
            ("zone_op", spec.zone_op.is_some()),
            ("zone_append", spec.zone_append),
            ("zrwa", spec.zrwa),
            ("zone_write_limit", spec.zone_write_limit.is_some()),
        ];
        if let Some((what, _)) = zoned_only.iter().find(|(_, on)| *on) {
            return Err(format!(
                "{what} needs a zoned namespace, but the job's namespace is conventional"
            ));
        }
        for s in [spec.size, Some(spec.offset), Some(spec.offset_increment)]
            .into_iter()
            .flatten()
        {
            if matches!(s, crate::job::SizeSpec::Zones(_)) {
                return Err(format!(
                    "size `{s}` counts zones, but the namespace is conventional"
                ));
            }
        }
        return Ok(());
    }
    let dev_open = geo.max_open_zones;
    for (name, v) in [
        ("max_open_zones", spec.max_open_zones),
        ("job_max_open_zones", spec.job_max_open_zones),
    ] {
        if dev_open != 0 && v > dev_open {
            return Err(format!(
                "{name}={v} is more than the device allows ({dev_open} open zones)"
            ));
        }
    }
    let writes = spec.rw.has_writes() && spec.zone_op.is_none();
    if writes && spec.rw.is_random() && spec.zonemode != ZoneMode::Zbd {
        return Err(format!(
            "rw={}: random writes on a zoned namespace ({}) fail at the first write off a write pointer: set zonemode=zbd (writes go to the write pointers), or pick a conventional namespace with nsid= (zn540-cns: nsid=1)",
            spec.rw.as_str(),
            spec.nsid.map_or("the device's first zoned namespace".to_string(), |n| format!("nsid={n}"))
        ));
    }
    if spec.zrwa {
        let Some(z) = &geo.zrwa else {
            return Err("zrwa=1 but the device has no Zone Random Write Area".into());
        };
        if spec.zone_append {
            return Err("zrwa=1 and zone_append=1 exclude each other (Zone Append is invalid in a zone with a ZRWA)".into());
        }
        if spec.zonemode != ZoneMode::Zbd || !writes {
            return Err("zrwa=1 applies to zonemode=zbd write jobs".into());
        }
        if max_block_bytes(spec) > z.size_lbas * lba {
            return Err(format!(
                "block size {} is larger than the ZRWA ({} bytes)",
                max_block_bytes(spec),
                z.size_lbas * lba
            ));
        }
        if let Some(f) = spec.zrwa_flush_bytes {
            let fb = f.resolve(geo.capacity_bytes, geo.zone_bytes, lba);
            let fg = z.flush_granularity_lbas * lba;
            if fb == 0 || fb % fg != 0 {
                return Err(format!(
                    "zrwa_flush_bytes={fb} is not a positive multiple of the ZRWA flush granularity ({fg} bytes)"
                ));
            }
        }
    } else if spec.zrwa_flush_bytes.is_some() {
        return Err("zrwa_flush_bytes needs zrwa=1".into());
    }
    if spec.zone_write_limit.is_some()
        && (spec.zonemode != ZoneMode::Zbd || !writes || spec.rw.is_random())
    {
        return Err(
            "zone_write_limit applies to zonemode=zbd sequential write jobs (rw=write)".into(),
        );
    }
    if spec.zone_op.is_some() && spec.zone_append {
        return Err("zone_op jobs issue no data I/O; zone_append has no meaning".into());
    }
    Ok(())
}

/// Byte range [start, start+len) of clone `clone` of a job.
const GIB: f64 = (1u64 << 30) as f64;

/// A run above this many I/Os gets a note before it starts.
const MANY_IOS: u64 = 1_000_000_000;

/// verify= above this many bytes written gets a note: the devices keep the
/// data in memory.
const LARGE_VERIFY_BYTES: u64 = 4 << 30;

/// What the user should know about a job before it runs (each clone would
/// say the same): a size clamped to the device, very many I/Os, a verify
/// that keeps gigabytes in memory.
pub(super) fn job_notes(spec: &JobSpec, geo: &Geometry) -> Result<Vec<String>, String> {
    let mut notes = Vec::new();
    let (cap, zone, lba) = (geo.capacity_bytes, geo.zone_bytes, geo.lba_bytes);
    let (start, len) = job_range(spec, geo, 0)?;
    if let Some(size) = spec.size {
        let asked = size.resolve(cap, zone, lba);
        if asked > len {
            notes.push(format!(
                "job {}: size={} is more than the device holds from the job's offset: its range is the {:.2} GiB from byte {start} to the end, as fio clamps it",
                spec.name,
                spec.options.get("size").map_or(asked.to_string(), Clone::clone),
                len as f64 / GIB,
            ));
        }
    }
    let bytes = spec
        .io_size
        .map_or(len, |s| s.resolve(cap, zone, lba))
        .saturating_mul(u64::from(spec.loops))
        .saturating_mul(u64::from(spec.numjobs.max(1)));
    // number_ios, when set, stops the job first
    let (ios, bytes) = if spec.number_ios > 0 {
        let ios = spec
            .number_ios
            .saturating_mul(u64::from(spec.numjobs.max(1)));
        (ios, bytes.min(ios.saturating_mul(max_block_bytes(spec))))
    } else {
        (bytes / spec.bs.max(1), bytes)
    };
    // (a runtime= bounds the run as the user chose)
    if spec.runtime.is_none() && spec.zone_op.is_none() && ios > MANY_IOS {
        notes.push(format!(
            "job {}: about {:.1e} I/Os ({:.0} GiB in blocks of {} bytes): a long run in host time; io_size=, number_ios= or runtime= make it shorter",
            spec.name,
            ios as f64,
            bytes as f64 / GIB,
            spec.bs
        ));
    }
    if spec.verify.is_some() && spec.rw.has_writes() && bytes > LARGE_VERIFY_BYTES {
        notes.push(format!(
            "job {}: verify= keeps what the run writes in memory: up to {:.1} GiB for this job",
            spec.name,
            bytes as f64 / GIB
        ));
    }
    Ok(notes)
}

pub(super) fn job_range(spec: &JobSpec, geo: &Geometry, clone: u32) -> Result<(u64, u64), String> {
    let cap = geo.capacity_bytes;
    let zone = geo.zone_bytes;
    let lba = geo.lba_bytes;
    let mut start = spec.offset.resolve(cap, zone, lba).saturating_add(
        u64::from(clone).saturating_mul(spec.offset_increment.resolve(cap, zone, lba)),
    );
    let zoned_range = spec.zonemode == ZoneMode::Zbd || spec.zone_op.is_some();
    if zoned_range && zone > 0 {
        start -= start % zone;
    } else {
        start -= start % lba;
    }
    if start >= cap {
        return Err(format!(
            "the job's range starts at byte {start} (offset + clone × offset_increment), beyond the device's {cap} bytes"
        ));
    }
    let len = spec
        .size
        .map(|s| s.resolve(cap, zone, lba))
        .unwrap_or(cap - start)
        .min(cap - start);
    if len < spec.bs && spec.zone_op.is_none() {
        return Err(format!(
            "the job's range ({len} bytes) is smaller than bs={}",
            spec.bs
        ));
    }
    Ok((start, len))
}
