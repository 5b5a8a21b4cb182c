//! The cases. Each starts with every zone empty and checks one area of
//! docs/semantics.md against the device: states and write pointers from
//! zone reports, data from reads, and the exact status of every command
//! that must fail. They hold for any correct ZNS device, with or without
//! auto-close of implicitly opened zones, and with the open and active
//! limits it reports (QEMU's check order: active before open).

use zns_core::{
    IoFlags, NvmeStatus, ReportFilter, ZoneAction, ZoneState, ZoneType, ZonedConfig, ZonedDevice,
};
use zns_sim::Runtime;

use crate::check::{ensure, ensure_eq, pattern, status, Dev, Step};
use crate::{Capabilities, Case};

pub static ALL: &[Case] = &[
    Case {
        name: "geometry",
        about: "the configuration is consistent and matches the expected geometry and limits",
        skip: always,
        run: geometry,
    },
    Case {
        name: "report",
        about: "full report, a report from inside a zone with a zone count, filtered reports, a report past the end (LBA Out of Range)",
        skip: zones3,
        run: report,
    },
    Case {
        name: "state_transitions",
        about: "open/close/finish/reset between ZSE, ZSIO, ZSEO, ZSC and ZSF; no-ops; Invalid Zone State Transition; Invalid Field off a zone start",
        skip: zones3,
        run: state_transitions,
    },
    Case {
        name: "write_at_wp_and_read_back",
        about: "writes (plain and FUA) at the write pointer move it; the data reads back",
        skip: zones3,
        run: write_at_wp_and_read_back,
    },
    Case {
        name: "write_off_wp",
        about: "writes ahead of and behind the write pointer (of open, empty and closed zones) are Zone Invalid Write and change nothing",
        skip: zones3,
        run: write_off_wp,
    },
    Case {
        name: "write_to_full_zone",
        about: "writes to a finished zone are Zone Is Full; its data stays readable",
        skip: zones3,
        run: write_to_full_zone,
    },
    Case {
        name: "write_across_capacity",
        about: "a write across the zone capacity is a Zone Boundary Error; one ending at it fills the zone",
        skip: zones3,
        run: write_across_capacity,
    },
    Case {
        name: "invalid_commands",
        about: "partial-block and empty buffers and transfers over MDTS are Invalid Field; I/O past the end is LBA Out of Range",
        skip: zones3,
        run: invalid_commands,
    },
    Case {
        name: "zone_append",
        about: "Zone Append returns the LBA it wrote; not at a zone start or over ZASL is Invalid Field; across capacity a Zone Boundary Error; into a full zone Zone Is Full",
        skip: needs_append,
        run: zone_append,
    },
    Case {
        name: "zrwa_window_and_explicit_flush",
        about: "Open with ZRWA, out-of-order writes and overwrites inside the ZRWA leave the WP; an explicit flush moves it; writes past the window or below the WP are Zone Invalid Write; bad flushes fail",
        skip: needs_zrwa_window,
        run: zrwa_window_and_explicit_flush,
    },
    Case {
        name: "zrwa_implicit_flush",
        about: "a ZRWA write past the ZRWA commits whole granules (implicit flush); Zone Append to a ZRWA zone is Invalid Zone Operation",
        skip: needs_zrwa_implicit,
        run: zrwa_implicit_flush,
    },
    Case {
        name: "zrwa_resources",
        about: "NUMZRWA zones can hold a ZRWA, the next is ZRWA Resources Unavailable, a reset gives one back",
        skip: needs_zrwa_resources,
        run: zrwa_resources,
    },
    Case {
        name: "zrwa_refused",
        about: "a device without ZRWA refuses Open with ZRWA and ZRWA flush with Invalid Zone Operation",
        skip: needs_no_zrwa,
        run: zrwa_refused,
    },
    Case {
        name: "open_limit",
        about: "explicit opens up to the open limit; the next is Too Many Open Zones (Too Many Active Zones when the active limit is reached first); finishing a zone frees one",
        skip: needs_open_limit,
        run: open_limit,
    },
    Case {
        name: "auto_close",
        about: "implicit opens up to the open limit; the next write closes the oldest implicitly opened zone (auto-close) or is Too Many Open Zones without it",
        skip: needs_open_limit,
        run: auto_close,
    },
    Case {
        name: "active_limit",
        about: "closed zones stay active; past the active limit writes and opens are Too Many Active Zones; a closed zone reopens; finishing frees a resource",
        skip: needs_active_limit,
        run: active_limit,
    },
    Case {
        name: "select_all",
        about: "select-all close, open (of closed zones) and finish act on exactly the zones they select",
        skip: needs_select_all,
        run: select_all,
    },
    Case {
        name: "reset_all",
        about: "select-all reset empties open, closed and full zones",
        skip: zones4,
        run: reset_all,
    },
    Case {
        name: "flush",
        about: "flush succeeds with and without written data; FUA and flushed data read back",
        skip: always,
        run: flush,
    },
];

// ---------------------------------------------------------------- skips

fn always(_: &ZonedConfig, _: &Capabilities) -> Option<String> {
    None
}

fn needs_zones(c: &ZonedConfig, n: u32) -> Option<String> {
    (c.zone_count < n).then(|| format!("needs {n} zones, the device has {}", c.zone_count))
}

fn zones3(c: &ZonedConfig, _: &Capabilities) -> Option<String> {
    needs_zones(c, 3).or_else(|| small_zone(c))
}

fn zones4(c: &ZonedConfig, _: &Capabilities) -> Option<String> {
    needs_zones(c, 4).or_else(|| small_zone(c))
}

fn small_zone(c: &ZonedConfig) -> Option<String> {
    (c.zone_capacity_lbas < 16 || c.max_transfer_lbas < 8).then(|| {
        format!(
            "needs zones of 16 blocks and 8-block transfers (capacity {}, MDTS {})",
            c.zone_capacity_lbas, c.max_transfer_lbas
        )
    })
}

fn needs_append(c: &ZonedConfig, caps: &Capabilities) -> Option<String> {
    if !caps.zone_append {
        return Some("the device does not carry Zone Append (capability zone_append)".into());
    }
    if c.append_limit_lbas() < 8 {
        return Some(format!("ZASL {} < 8 blocks", c.append_limit_lbas()));
    }
    zones3(c, caps)
}

fn zrwa_cap(c: &ZonedConfig, caps: &Capabilities) -> Result<zns_core::ZrwaConfig, String> {
    if !caps.zrwa {
        return Err("the device does not carry ZRWA (capability zrwa)".into());
    }
    let z = c
        .zrwa
        .ok_or("ZRWA is declared but the configuration has none")?;
    if let Some(why) = zones3(c, caps) {
        return Err(why);
    }
    Ok(z)
}

fn needs_zrwa_window(c: &ZonedConfig, caps: &Capabilities) -> Option<String> {
    let z = match zrwa_cap(c, caps) {
        Ok(z) => z,
        Err(why) => return Some(why),
    };
    let fg = z.flush_granularity_lbas;
    if 4 * fg > z.size_lbas || 2 * fg > u64::from(c.max_transfer_lbas) {
        return Some(format!(
            "needs ZRWASZ ≥ 4 × ZRWAFG and MDTS ≥ 2 × ZRWAFG (ZRWASZ {}, ZRWAFG {fg}, MDTS {})",
            z.size_lbas, c.max_transfer_lbas
        ));
    }
    (c.zone_capacity_lbas < 4 * fg + 2 * z.size_lbas).then(|| {
        format!(
            "needs a zone capacity of 4 × ZRWAFG + 2 × ZRWASZ ({})",
            c.zone_capacity_lbas
        )
    })
}

fn needs_zrwa_implicit(c: &ZonedConfig, caps: &Capabilities) -> Option<String> {
    let z = match zrwa_cap(c, caps) {
        Ok(z) => z,
        Err(why) => return Some(why),
    };
    let fg = z.flush_granularity_lbas;
    if fg > u64::from(c.max_transfer_lbas) || c.zone_capacity_lbas < z.size_lbas + 2 * fg {
        return Some(format!(
            "needs MDTS ≥ ZRWAFG and a capacity of ZRWASZ + 2 × ZRWAFG (MDTS {}, capacity {})",
            c.max_transfer_lbas, c.zone_capacity_lbas
        ));
    }
    None
}

fn needs_zrwa_resources(c: &ZonedConfig, caps: &Capabilities) -> Option<String> {
    let z = match zrwa_cap(c, caps) {
        Ok(z) => z,
        Err(why) => return Some(why),
    };
    let n = z.resources;
    let below = |limit: u32| limit == 0 || n < limit;
    if n >= c.zone_count || !below(c.max_open_zones) || !below(c.max_active_zones) {
        return Some(format!(
            "NUMZRWA {n} is not below the zone count {} and the open/active limits {}/{}",
            c.zone_count, c.max_open_zones, c.max_active_zones
        ));
    }
    None
}

fn needs_no_zrwa(c: &ZonedConfig, caps: &Capabilities) -> Option<String> {
    if caps.zrwa {
        return Some("the device carries ZRWA (zrwa_* cases check it)".into());
    }
    if c.zrwa.is_some() {
        return Some(
            "the device has a ZRWA its transport does not carry: how it refuses is not specified"
                .into(),
        );
    }
    zones3(c, caps)
}

fn needs_open_limit(c: &ZonedConfig, caps: &Capabilities) -> Option<String> {
    limit_room("open", c.max_open_zones, c).or_else(|| zones3(c, caps))
}

fn needs_active_limit(c: &ZonedConfig, caps: &Capabilities) -> Option<String> {
    limit_room("active", c.max_active_zones, c).or_else(|| zones3(c, caps))
}

/// A limit case needs the limit (0 = none) and two zones beyond it.
fn limit_room(what: &str, m: u32, c: &ZonedConfig) -> Option<String> {
    (m == 0 || m + 2 > c.zone_count).then(|| {
        format!(
            "no {what} limit below the zone count - 1 (max {what} {m}, {} zones)",
            c.zone_count
        )
    })
}

fn needs_select_all(c: &ZonedConfig, caps: &Capabilities) -> Option<String> {
    if !caps.select_all {
        return Some(
            "the device carries no select-all open/close/finish (capability select_all)".into(),
        );
    }
    zones4(c, caps)
}

/// `limit` (0 = none) as a bound on a count.
fn limit_or(limit: u32, otherwise: u64) -> u64 {
    if limit == 0 {
        otherwise
    } else {
        u64::from(limit)
    }
}

// ---------------------------------------------------------------- cases

fn geometry(_rt: &mut Runtime, dev: &dyn ZonedDevice, caps: &Capabilities) -> Step {
    let c = dev.config();
    c.validate()
        .map_err(|e| format!("inconsistent configuration {c:?}: {e}"))?;
    if caps.zrwa {
        ensure!(
            c.zrwa.is_some(),
            "ZRWA is declared but the configuration has none"
        );
    }
    let Some(e) = &caps.expected else {
        return Ok(());
    };
    macro_rules! expect {
        ($field:ident, $got:expr) => {
            if let Some(want) = e.$field {
                ensure_eq!($got, want, stringify!($field));
            }
        };
    }
    expect!(lba_bytes, c.lba_bytes);
    expect!(zone_count, c.zone_count);
    expect!(zone_size_lbas, c.zone_size_lbas);
    expect!(zone_capacity_lbas, c.zone_capacity_lbas);
    expect!(max_open_zones, c.max_open_zones);
    expect!(max_active_zones, c.max_active_zones);
    if let (true, Some(z)) = (caps.zrwa, c.zrwa) {
        expect!(zrwa_size_lbas, z.size_lbas);
        expect!(zrwa_flush_granularity_lbas, z.flush_granularity_lbas);
        expect!(zrwa_resources, z.resources);
    }
    Ok(())
}

fn report(rt: &mut Runtime, dev: &dyn ZonedDevice, _: &Capabilities) -> Step {
    let c = dev.config().clone();
    let mut d = Dev::new(rt, dev);
    let all = d.report(0, ReportFilter::All, usize::MAX)?;
    ensure_eq!(all.len(), c.zone_count as usize, "zones in a full report");
    for (i, z) in all.iter().enumerate() {
        let start = d.start(i as u64);
        ensure_eq!(
            (z.zone_type, z.state, z.start_lba, z.write_pointer),
            (
                ZoneType::SequentialWriteRequired,
                ZoneState::Empty,
                start,
                start
            ),
            "zone {i} (type, state, start, WP)"
        );
        ensure_eq!(z.capacity_lbas, c.zone_capacity_lbas, "zone {i} capacity");
    }
    // from inside zone 1, at most 2 zones
    let two = d.report(d.zs + 1, ReportFilter::All, 2)?;
    let starts: Vec<u64> = two.iter().map(|z| z.start_lba).collect();
    ensure_eq!(
        starts,
        vec![d.zs, 2 * d.zs],
        "report from inside zone 1, max 2"
    );
    ensure_eq!(
        d.report(0, ReportFilter::All, 0)?.len(),
        0,
        "report of at most 0 zones"
    );
    // filters
    d.write(d.start(1), 1, 1)?;
    d.open(2)?;
    let one = |v: Vec<zns_core::ZoneDescriptor>| v.iter().map(|z| z.start_lba).collect::<Vec<_>>();
    ensure_eq!(
        one(d.report(0, ReportFilter::ImplicitlyOpened, usize::MAX)?),
        vec![d.zs],
        "implicitly opened zones"
    );
    ensure_eq!(
        one(d.report(0, ReportFilter::ExplicitlyOpened, usize::MAX)?),
        vec![2 * d.zs],
        "explicitly opened zones"
    );
    ensure_eq!(
        d.count(ReportFilter::Empty)?,
        c.zone_count as usize - 2,
        "empty zones"
    );
    for f in [
        ReportFilter::Closed,
        ReportFilter::Full,
        ReportFilter::Offline,
    ] {
        ensure_eq!(d.count(f)?, 0, "{f:?} zones");
    }
    // a filtered report lists only zones from the one holding the start LBA
    ensure_eq!(
        d.report(2 * d.zs, ReportFilter::ImplicitlyOpened, usize::MAX)?
            .len(),
        0,
        "implicitly opened zones from zone 2 on"
    );
    status(
        "report at the end of the namespace",
        d.rt.block_on(dev.report_zones(c.total_lbas(), ReportFilter::All, 1)),
        NvmeStatus::LbaOutOfRange,
    )
}

fn state_transitions(rt: &mut Runtime, dev: &dyn ZonedDevice, _: &Capabilities) -> Step {
    let c = dev.config().clone();
    let mut d = Dev::new(rt, dev);
    let s = d.start(1);
    d.write(s, 1, 1)?;
    ensure_eq!(
        d.state_wp(1)?,
        (ZoneState::ImplicitlyOpened, s + 1),
        "written"
    );
    d.send(ZoneAction::Close, 1)?;
    ensure_eq!(d.state_wp(1)?, (ZoneState::Closed, s + 1), "closed");
    d.send(ZoneAction::Close, 1)?;
    ensure_eq!(d.state(1)?, ZoneState::Closed, "closed again (no-op)");
    d.open(1)?;
    ensure_eq!(
        d.state_wp(1)?,
        (ZoneState::ExplicitlyOpened, s + 1),
        "opened"
    );
    d.open(1)?;
    ensure_eq!(
        d.state(1)?,
        ZoneState::ExplicitlyOpened,
        "opened again (no-op)"
    );
    d.send(ZoneAction::Finish, 1)?;
    ensure_eq!(
        d.state_wp(1)?,
        (ZoneState::Full, s + c.zone_capacity_lbas),
        "finished (the WP of a full zone is reported at its capacity)"
    );
    d.send(ZoneAction::Finish, 1)?;
    ensure_eq!(d.state(1)?, ZoneState::Full, "finished again (no-op)");
    let bad = NvmeStatus::InvalidZoneStateTransition;
    status(
        "open of a full zone",
        d.send_r(ZoneAction::Open { zrwa: false }, s, false),
        bad,
    )?;
    status(
        "close of a full zone",
        d.send_r(ZoneAction::Close, s, false),
        bad,
    )?;
    let e = d.start(2);
    status(
        "close of an empty zone",
        d.send_r(ZoneAction::Close, e, false),
        bad,
    )?;
    ensure_eq!(d.state(2)?, ZoneState::Empty, "after the refused close");
    d.send(ZoneAction::Finish, 2)?;
    ensure_eq!(
        d.state_wp(2)?,
        (ZoneState::Full, e + c.zone_capacity_lbas),
        "an empty zone finished"
    );
    d.send(ZoneAction::Reset, 1)?;
    ensure_eq!(d.state_wp(1)?, (ZoneState::Empty, s), "reset");
    d.send(ZoneAction::Reset, 1)?;
    ensure_eq!(d.state_wp(1)?, (ZoneState::Empty, s), "reset again (no-op)");
    d.send(ZoneAction::Reset, 2)?;
    ensure_eq!(
        d.state_wp(2)?,
        (ZoneState::Empty, e),
        "reset of a finished empty zone"
    );
    status(
        "reset off a zone start",
        d.send_r(ZoneAction::Reset, s + 1, false),
        NvmeStatus::InvalidField,
    )?;
    status(
        "open off a zone start",
        d.send_r(ZoneAction::Open { zrwa: false }, s + 1, false),
        NvmeStatus::InvalidField,
    )?;
    status(
        "reset past the end",
        d.send_r(ZoneAction::Reset, c.total_lbas(), false),
        NvmeStatus::LbaOutOfRange,
    )?;
    ensure_eq!(d.state(1)?, ZoneState::Empty, "after the refused commands");
    Ok(())
}

fn write_at_wp_and_read_back(rt: &mut Runtime, dev: &dyn ZonedDevice, _: &Capabilities) -> Step {
    let mut d = Dev::new(rt, dev);
    let s = d.start(1);
    let a = d.write(s, 8, 2)?;
    ensure_eq!(
        d.state_wp(1)?,
        (ZoneState::ImplicitlyOpened, s + 8),
        "after 8 blocks"
    );
    let b = pattern(s + 8, 4, d.lba, 3);
    d.write_r(s + 8, &b, IoFlags::FUA)
        .map_err(|e| format!("FUA write at the WP: {e}"))?;
    ensure_eq!(
        d.state_wp(1)?,
        (ZoneState::ImplicitlyOpened, s + 12),
        "after a FUA write of 4"
    );
    d.read_back(s, &a, "first write")?;
    d.read_back(s + 8, &b, "FUA write")?;
    d.read_back(s, &[a, b].concat(), "both at once")?;
    // zone 2 written too: zones keep their own data
    let c2 = d.write(d.start(2), 3, 4)?;
    d.read_back(d.start(2), &c2, "zone 2")?;
    ensure_eq!(
        d.state_wp(1)?,
        (ZoneState::ImplicitlyOpened, s + 12),
        "zone 1 after zone 2"
    );
    Ok(())
}

fn write_off_wp(rt: &mut Runtime, dev: &dyn ZonedDevice, _: &Capabilities) -> Step {
    let mut d = Dev::new(rt, dev);
    let s = d.start(1);
    let data = d.write(s, 4, 5)?;
    let one = pattern(0, 1, d.lba, 6);
    let bad = NvmeStatus::ZoneInvalidWrite;
    status(
        "write ahead of the WP",
        d.write_r(s + 8, &one, IoFlags::NONE),
        bad,
    )?;
    status(
        "write at the zone start, behind the WP",
        d.write_r(s, &one, IoFlags::NONE),
        bad,
    )?;
    status(
        "write one block behind the WP",
        d.write_r(s + 3, &one, IoFlags::FUA),
        bad,
    )?;
    ensure_eq!(
        d.state_wp(1)?,
        (ZoneState::ImplicitlyOpened, s + 4),
        "after the refused writes"
    );
    d.read_back(s, &data, "data under the refused writes")?;
    // an empty zone's WP is its start
    let e = d.start(2);
    status(
        "write off the start of an empty zone",
        d.write_r(e + 1, &one, IoFlags::NONE),
        bad,
    )?;
    ensure_eq!(d.state_wp(2)?, (ZoneState::Empty, e), "the empty zone");
    // a closed zone keeps its WP
    d.send(ZoneAction::Close, 1)?;
    status(
        "write off the WP of a closed zone",
        d.write_r(s + 5, &one, IoFlags::NONE),
        bad,
    )?;
    ensure_eq!(
        d.state_wp(1)?,
        (ZoneState::Closed, s + 4),
        "the closed zone"
    );
    d.write(s + 4, 1, 7)?;
    ensure_eq!(
        d.state_wp(1)?,
        (ZoneState::ImplicitlyOpened, s + 5),
        "a closed zone written at its WP"
    );
    Ok(())
}

fn write_to_full_zone(rt: &mut Runtime, dev: &dyn ZonedDevice, _: &Capabilities) -> Step {
    let cap = dev.config().zone_capacity_lbas;
    let mut d = Dev::new(rt, dev);
    let s = d.start(1);
    let data = d.write(s, 4, 8)?;
    d.send(ZoneAction::Finish, 1)?;
    ensure_eq!(d.state(1)?, ZoneState::Full, "finished");
    let one = pattern(0, 1, d.lba, 9);
    let full = NvmeStatus::ZoneIsFull;
    status(
        "write at the old WP of a full zone",
        d.write_r(s + 4, &one, IoFlags::NONE),
        full,
    )?;
    status(
        "write at the start of a full zone",
        d.write_r(s, &one, IoFlags::NONE),
        full,
    )?;
    status(
        "write at the capacity of a full zone",
        d.write_r(s + cap - 1, &one, IoFlags::FUA),
        full,
    )?;
    d.read_back(s, &data, "data of the finished zone")?;
    Ok(())
}

fn write_across_capacity(rt: &mut Runtime, dev: &dyn ZonedDevice, _: &Capabilities) -> Step {
    let cap = dev.config().zone_capacity_lbas;
    let mut d = Dev::new(rt, dev);
    let s = d.start(1);
    d.fill(s, s + cap - 2)?;
    let four = pattern(s + cap - 2, 4, d.lba, 10);
    status(
        "write of 4 blocks 2 before the capacity",
        d.write_r(s + cap - 2, &four, IoFlags::NONE),
        NvmeStatus::ZoneBoundaryError,
    )?;
    ensure_eq!(
        d.state_wp(1)?,
        (ZoneState::ImplicitlyOpened, s + cap - 2),
        "after the refused write"
    );
    let two = d.write(s + cap - 2, 2, 11)?;
    ensure_eq!(d.state(1)?, ZoneState::Full, "written up to the capacity");
    d.read_back(s + cap - 2, &two, "the last blocks")?;
    status(
        "write to the zone filled by writes",
        d.write_r(s + cap - 2, &two, IoFlags::NONE),
        NvmeStatus::ZoneIsFull,
    )
}

fn invalid_commands(rt: &mut Runtime, dev: &dyn ZonedDevice, _: &Capabilities) -> Step {
    let c = dev.config().clone();
    let mut d = Dev::new(rt, dev);
    let s = d.start(1);
    let lba = d.lba;
    let inval = NvmeStatus::InvalidField;
    let range = NvmeStatus::LbaOutOfRange;
    status(
        "write of a partial block",
        d.write_r(s, &vec![0; lba - 1], IoFlags::NONE),
        inval,
    )?;
    status("write of no data", d.write_r(s, &[], IoFlags::NONE), inval)?;
    let over = vec![0u8; (c.max_transfer_lbas as usize + 1) * lba];
    status("write over MDTS", d.write_r(s, &over, IoFlags::NONE), inval)?;
    let mut part = vec![0u8; lba + 1];
    status(
        "read of a partial block",
        d.rt.block_on(dev.read(s, &mut part)),
        inval,
    )?;
    let mut two = vec![0u8; 2 * lba];
    let end = c.total_lbas();
    status(
        "read at the end",
        d.rt.block_on(dev.read(end, &mut two)),
        range,
    )?;
    status(
        "read across the end",
        d.rt.block_on(dev.read(end - 1, &mut two)),
        range,
    )?;
    status(
        "write across the end",
        d.write_r(end - 1, &two, IoFlags::NONE),
        range,
    )?;
    ensure_eq!(
        d.count(ReportFilter::Empty)?,
        c.zone_count as usize,
        "empty zones after the refused commands"
    );
    Ok(())
}

fn zone_append(rt: &mut Runtime, dev: &dyn ZonedDevice, _: &Capabilities) -> Step {
    let c = dev.config().clone();
    let cap = c.zone_capacity_lbas;
    let mut d = Dev::new(rt, dev);
    let s = d.start(1);
    let lba = d.lba;
    let a = pattern(0, 8, lba, 41);
    let b = pattern(0, 3, lba, 42);
    let append =
        |d: &mut Dev, zslba: u64, data: &[u8], flags| d.rt.block_on(dev.append(zslba, data, flags));
    let at_a = append(&mut d, s, &a, IoFlags::NONE).map_err(|e| format!("append of 8: {e}"))?;
    let at_b = append(&mut d, s, &b, IoFlags::FUA).map_err(|e| format!("append of 3: {e}"))?;
    ensure_eq!((at_a, at_b), (s, s + 8), "LBAs the appends returned");
    ensure_eq!(
        d.state_wp(1)?,
        (ZoneState::ImplicitlyOpened, s + 11),
        "after the appends"
    );
    d.read_back(at_a, &a, "first append")?;
    d.read_back(at_b, &b, "second append")?;
    let inval = NvmeStatus::InvalidField;
    status(
        "append off the zone start",
        append(&mut d, s + 1, &b, IoFlags::NONE),
        inval,
    )?;
    let zasl = c.append_limit_lbas();
    if zasl < c.max_transfer_lbas {
        let over = vec![0u8; (zasl as usize + 1) * lba];
        status(
            "append over ZASL",
            append(&mut d, s, &over, IoFlags::NONE),
            inval,
        )?;
    }
    ensure_eq!(
        d.state_wp(1)?,
        (ZoneState::ImplicitlyOpened, s + 11),
        "after the refused appends"
    );
    // across the capacity
    d.fill(s + 11, s + cap - 2)?;
    status(
        "append of 4 blocks 2 before the capacity",
        append(&mut d, s, &pattern(0, 4, lba, 43), IoFlags::NONE),
        NvmeStatus::ZoneBoundaryError,
    )?;
    let last = append(&mut d, s, &b[..2 * lba], IoFlags::NONE)
        .map_err(|e| format!("append of the last 2 blocks: {e}"))?;
    ensure_eq!(last, s + cap - 2, "LBA of the last append");
    ensure_eq!(d.state(1)?, ZoneState::Full, "filled by appends");
    status(
        "append to a full zone",
        append(&mut d, s, &b, IoFlags::NONE),
        NvmeStatus::ZoneIsFull,
    )?;
    // an append to an empty zone opens it
    let e = d.start(2);
    let at = append(&mut d, e, &b, IoFlags::NONE).map_err(|e| format!("append to zone 2: {e}"))?;
    ensure_eq!(at, e, "append to an empty zone lands at its start");
    ensure_eq!(
        d.state_wp(2)?,
        (ZoneState::ImplicitlyOpened, e + 3),
        "zone 2"
    );
    Ok(())
}

fn zrwa_window_and_explicit_flush(
    rt: &mut Runtime,
    dev: &dyn ZonedDevice,
    caps: &Capabilities,
) -> Step {
    let c = dev.config().clone();
    let zrwa = zrwa_cap(&c, caps)?;
    let fg = zrwa.flush_granularity_lbas;
    let mut d = Dev::new(rt, dev);
    let lba = d.lba;
    let z = d.start(1);
    d.send(ZoneAction::Open { zrwa: true }, 1)?;
    ensure_eq!(
        d.state_wp(1)?,
        (ZoneState::ExplicitlyOpened, z),
        "opened with a ZRWA"
    );
    // out of order inside the ZRWA: the second half first, then an overwrite
    let hi = d.write(z + 2 * fg, 2 * fg, 5)?;
    let lo = d.write(z, 2 * fg, 5)?;
    let lo2 = d.write(z, fg, 6)?;
    ensure_eq!(
        d.state_wp(1)?,
        (ZoneState::ExplicitlyOpened, z),
        "ZRWA writes do not move the WP before a flush"
    );
    // explicit flush of the first 3 granules (SLBA = the last LBA to commit)
    d.send_r(ZoneAction::FlushZrwa, z + 3 * fg - 1, false)
        .map_err(|e| format!("ZRWA flush of 3 granules: {e}"))?;
    ensure_eq!(
        d.state_wp(1)?,
        (ZoneState::ExplicitlyOpened, z + 3 * fg),
        "after the flush"
    );
    let one_fg = pattern(0, fg, lba, 7);
    let bad = NvmeStatus::ZoneInvalidWrite;
    let beyond = z + 3 * fg + 2 * zrwa.size_lbas;
    status(
        "write past the ZRWA and its implicit flush region",
        d.write_r(beyond, &one_fg, IoFlags::NONE),
        bad,
    )?;
    status(
        "write below the WP (committed)",
        d.write_r(z, &one_fg, IoFlags::NONE),
        bad,
    )?;
    let fgb = fg as usize * lba;
    d.read_back(
        z,
        &[&lo2[..], &lo[fgb..], &hi[..]].concat(),
        "ZRWA data after the flush",
    )?;
    status(
        "select-all ZRWA flush",
        d.send_r(ZoneAction::FlushZrwa, 0, true),
        NvmeStatus::InvalidField,
    )?;
    status(
        "ZRWA flush below the WP",
        d.send_r(ZoneAction::FlushZrwa, z, false),
        NvmeStatus::ZoneBoundaryError,
    )?;
    status(
        "ZRWA flush of a zone without a ZRWA",
        d.send_r(ZoneAction::FlushZrwa, d.start(2) + fg - 1, false),
        NvmeStatus::InvalidField,
    )?;
    ensure_eq!(
        d.state_wp(1)?,
        (ZoneState::ExplicitlyOpened, z + 3 * fg),
        "after the refused flushes"
    );
    Ok(())
}

fn zrwa_implicit_flush(rt: &mut Runtime, dev: &dyn ZonedDevice, caps: &Capabilities) -> Step {
    let c = dev.config().clone();
    let zrwa = zrwa_cap(&c, caps)?;
    let (fg, size) = (zrwa.flush_granularity_lbas, zrwa.size_lbas);
    let mut d = Dev::new(rt, dev);
    let z = d.start(1);
    d.send(ZoneAction::Open { zrwa: true }, 1)?;
    // one granule just past the ZRWA [WP, WP + ZRWASZ): the WP moves one granule
    let past = d.write(z + size, fg, 12)?;
    ensure_eq!(
        d.state_wp(1)?,
        (ZoneState::ExplicitlyOpened, z + fg),
        "after a write of one granule past the ZRWA"
    );
    let one = pattern(0, 1, d.lba, 13);
    status(
        "write below the implicitly flushed WP",
        d.write_r(z, &one, IoFlags::NONE),
        NvmeStatus::ZoneInvalidWrite,
    )?;
    let at = d.write(z + fg, fg, 14)?;
    ensure_eq!(
        d.state_wp(1)?,
        (ZoneState::ExplicitlyOpened, z + fg),
        "a write inside the ZRWA"
    );
    d.read_back(z + fg, &at, "inside the ZRWA")?;
    d.read_back(z + size, &past, "past the first ZRWA")?;
    if caps.zone_append {
        status(
            "append to a zone holding a ZRWA",
            d.rt.block_on(dev.append(z, &one, IoFlags::NONE)),
            NvmeStatus::InvalidZoneOperation,
        )?;
    }
    Ok(())
}

fn zrwa_resources(rt: &mut Runtime, dev: &dyn ZonedDevice, caps: &Capabilities) -> Step {
    let c = dev.config().clone();
    let n = u64::from(zrwa_cap(&c, caps)?.resources);
    let mut d = Dev::new(rt, dev);
    let zrwa = ZoneAction::Open { zrwa: true };
    for z in 0..n {
        d.send(zrwa, z)?;
    }
    status(
        &format!("open with ZRWA of zone {n} while {n} hold one"),
        d.send_r(zrwa, d.start(n), false),
        NvmeStatus::ZrwaResourcesUnavailable,
    )?;
    ensure_eq!(d.state(n)?, ZoneState::Empty, "the refused zone");
    d.send(ZoneAction::Reset, 0)?;
    d.send(zrwa, n)?;
    ensure_eq!(
        d.state(n)?,
        ZoneState::ExplicitlyOpened,
        "opened after a reset"
    );
    Ok(())
}

fn zrwa_refused(rt: &mut Runtime, dev: &dyn ZonedDevice, _: &Capabilities) -> Step {
    let mut d = Dev::new(rt, dev);
    let s = d.start(1);
    let op = NvmeStatus::InvalidZoneOperation;
    status(
        "open with ZRWA",
        d.send_r(ZoneAction::Open { zrwa: true }, s, false),
        op,
    )?;
    ensure_eq!(d.state(1)?, ZoneState::Empty, "after the refused open");
    d.write(s, 1, 15)?;
    status("ZRWA flush", d.send_r(ZoneAction::FlushZrwa, s, false), op)?;
    ensure_eq!(
        d.state_wp(1)?,
        (ZoneState::ImplicitlyOpened, s + 1),
        "after the refused flush"
    );
    Ok(())
}

/// The status of a command that would take one more open (and, from ZSE,
/// active) resource when `open` zones are open and `active` active: QEMU
/// checks the active limit first.
fn resource_status(c: &ZonedConfig, active: u64, from_empty: bool) -> NvmeStatus {
    if from_empty && c.max_active_zones != 0 && active + 1 > u64::from(c.max_active_zones) {
        NvmeStatus::TooManyActiveZones
    } else {
        NvmeStatus::TooManyOpenZones
    }
}

fn open_limit(rt: &mut Runtime, dev: &dyn ZonedDevice, _: &Capabilities) -> Step {
    let c = dev.config().clone();
    let m = u64::from(c.max_open_zones);
    let mut d = Dev::new(rt, dev);
    for z in 0..m {
        d.open(z)?;
    }
    ensure_eq!(
        d.count(ReportFilter::ExplicitlyOpened)?,
        m as usize,
        "explicitly opened zones"
    );
    status(
        &format!("open of zone {m} with {m} open"),
        d.send_r(ZoneAction::Open { zrwa: false }, d.start(m), false),
        resource_status(&c, m, true),
    )?;
    status(
        &format!("write to zone {m} with {m} explicitly open"),
        d.write_r(d.start(m), &pattern(0, 1, d.lba, 16), IoFlags::NONE),
        resource_status(&c, m, true),
    )?;
    ensure_eq!(d.state(m)?, ZoneState::Empty, "the refused zone");
    // an open zone can be opened again and written
    d.open(0)?;
    d.write(d.start(0), 1, 17)?;
    ensure_eq!(
        d.state_wp(0)?,
        (ZoneState::ExplicitlyOpened, d.start(0) + 1),
        "zone 0"
    );
    // explicitly opened zones are never closed by the controller; finishing
    // one frees its resources
    ensure_eq!(
        d.count(ReportFilter::ExplicitlyOpened)?,
        m as usize,
        "explicitly opened zones after the refusals"
    );
    d.send(ZoneAction::Finish, 0)?;
    d.open(m)?;
    ensure_eq!(
        d.state(m)?,
        ZoneState::ExplicitlyOpened,
        "opened after a finish"
    );
    Ok(())
}

fn auto_close(rt: &mut Runtime, dev: &dyn ZonedDevice, _: &Capabilities) -> Step {
    let c = dev.config().clone();
    let m = u64::from(c.max_open_zones);
    let mut d = Dev::new(rt, dev);
    for z in 0..m {
        d.write(d.start(z), 1, 18)?;
    }
    ensure_eq!(
        d.count(ReportFilter::ImplicitlyOpened)?,
        m as usize,
        "implicitly opened zones"
    );
    let r = d.write_r(
        d.start(m),
        &pattern(d.start(m), 1, d.lba, 19),
        IoFlags::NONE,
    );
    if !c.auto_close_implicit {
        status(
            "write to one more zone without auto-close",
            r,
            NvmeStatus::TooManyOpenZones,
        )?;
        ensure_eq!(d.state(0)?, ZoneState::ImplicitlyOpened, "zone 0");
        return Ok(());
    }
    // the oldest implicitly opened zone is closed, even when the write is
    // then refused for want of an active resource (docs/semantics.md)
    let active_full = resource_status(&c, m, true) == NvmeStatus::TooManyActiveZones;
    if active_full {
        status(
            &format!("write to zone {m} with {m} active"),
            r,
            NvmeStatus::TooManyActiveZones,
        )?;
        ensure_eq!(d.state(m)?, ZoneState::Empty, "the refused zone");
    } else {
        r.map_err(|e| format!("write to zone {m} with {m} implicitly open: {e}"))?;
        ensure_eq!(
            d.state_wp(m)?,
            (ZoneState::ImplicitlyOpened, d.start(m) + 1),
            "the zone written"
        );
    }
    ensure_eq!(
        d.state_wp(0)?,
        (ZoneState::Closed, d.start(0) + 1),
        "zone 0, the oldest implicitly opened (auto-closed)"
    );
    for z in 1..m {
        ensure_eq!(d.state(z)?, ZoneState::ImplicitlyOpened, "zone {z}");
    }
    // an explicitly opened zone is never auto-closed: with zone 1 made
    // explicit, reopening closed zone 0 by a write closes zone 2, the oldest
    // implicitly opened one
    if !active_full && m >= 3 {
        d.open(1)?;
        d.write(d.start(0) + 1, 1, 20)?;
        ensure_eq!(
            (d.state(0)?, d.state(1)?, d.state(2)?),
            (
                ZoneState::ImplicitlyOpened,
                ZoneState::ExplicitlyOpened,
                ZoneState::Closed
            ),
            "zones 0, 1, 2 after zone 1 was opened and closed zone 0 written"
        );
    }
    Ok(())
}

fn active_limit(rt: &mut Runtime, dev: &dyn ZonedDevice, _: &Capabilities) -> Step {
    let c = dev.config().clone();
    let m = u64::from(c.max_active_zones);
    let mut d = Dev::new(rt, dev);
    for z in 0..m {
        d.write(d.start(z), 1, 21)?;
        d.send(ZoneAction::Close, z)?;
    }
    ensure_eq!(d.count(ReportFilter::Closed)?, m as usize, "closed zones");
    let one = pattern(0, 1, d.lba, 22);
    let act = NvmeStatus::TooManyActiveZones;
    status(
        &format!("write to zone {m} with {m} closed"),
        d.write_r(d.start(m), &one, IoFlags::NONE),
        act,
    )?;
    status(
        &format!("open of zone {m} with {m} closed"),
        d.send_r(ZoneAction::Open { zrwa: false }, d.start(m), false),
        act,
    )?;
    ensure_eq!(d.state(m)?, ZoneState::Empty, "the refused zone");
    // a closed zone is active already: it can be written and opened
    d.write(d.start(0) + 1, 1, 23)?;
    ensure_eq!(
        d.state_wp(0)?,
        (ZoneState::ImplicitlyOpened, d.start(0) + 2),
        "closed zone 0 written"
    );
    if m > 1 && (c.max_open_zones == 0 || c.max_open_zones >= 2) {
        d.open(1)?;
        ensure_eq!(
            d.state(1)?,
            ZoneState::ExplicitlyOpened,
            "closed zone 1 opened"
        );
    }
    // finishing a zone frees its active resource
    d.send(ZoneAction::Finish, 0)?;
    d.write(d.start(m), 1, 24)?;
    ensure_eq!(
        d.state(m)?,
        ZoneState::ImplicitlyOpened,
        "zone {m} after a finish"
    );
    Ok(())
}

fn select_all(rt: &mut Runtime, dev: &dyn ZonedDevice, _: &Capabilities) -> Step {
    let c = dev.config().clone();
    let k = 3u64
        .min(limit_or(c.max_open_zones, 3))
        .min(limit_or(c.max_active_zones, 3));
    let mut d = Dev::new(rt, dev);
    d.write(d.start(0), 1, 25)?;
    for z in 1..k {
        d.open(z)?;
    }
    let n = k as usize;
    d.send_all(ZoneAction::Close)?;
    ensure_eq!(
        d.count(ReportFilter::Closed)?,
        n,
        "closed zones after close-all"
    );
    ensure_eq!(
        d.state_wp(0)?,
        (ZoneState::Closed, d.start(0) + 1),
        "zone 0"
    );
    d.send_all(ZoneAction::Open { zrwa: false })?;
    ensure_eq!(
        d.count(ReportFilter::ExplicitlyOpened)?,
        n,
        "explicitly opened zones after open-all"
    );
    d.send_all(ZoneAction::Close)?;
    d.send_all(ZoneAction::Finish)?;
    ensure_eq!(
        d.count(ReportFilter::Full)?,
        n,
        "full zones after finish-all"
    );
    ensure_eq!(
        d.count(ReportFilter::Empty)?,
        c.zone_count as usize - n,
        "empty zones (finish-all does not select them)"
    );
    // open-all selects closed zones only: with none, nothing changes
    d.send_all(ZoneAction::Open { zrwa: false })?;
    ensure_eq!(
        d.count(ReportFilter::ExplicitlyOpened)?,
        0,
        "open-all without closed zones"
    );
    Ok(())
}

fn reset_all(rt: &mut Runtime, dev: &dyn ZonedDevice, _: &Capabilities) -> Step {
    let c = dev.config().clone();
    let (open, active) = (
        limit_or(c.max_open_zones, 3),
        limit_or(c.max_active_zones, 3),
    );
    let mut d = Dev::new(rt, dev);
    // zone 3 full by writes, then as many active states as the limits allow
    d.fill(d.start(3), d.start(3) + c.zone_capacity_lbas)?;
    d.write(d.start(0), 2, 26)?;
    if active >= 2 && open >= 2 {
        d.write(d.start(1), 1, 27)?;
        d.send(ZoneAction::Close, 1)?;
    }
    if active >= 3 && open >= 2 {
        d.open(2)?;
    }
    ensure_eq!(d.state(3)?, ZoneState::Full, "zone 3");
    d.send_all(ZoneAction::Reset)?;
    for (i, z) in d
        .report(0, ReportFilter::All, usize::MAX)?
        .iter()
        .enumerate()
    {
        ensure_eq!(
            (z.state, z.write_pointer),
            (ZoneState::Empty, d.start(i as u64)),
            "zone {i} after reset-all"
        );
    }
    d.send_all(ZoneAction::Reset)?;
    // the zones are writable from their start again
    d.write(d.start(3), 1, 28)?;
    Ok(())
}

fn flush(rt: &mut Runtime, dev: &dyn ZonedDevice, _: &Capabilities) -> Step {
    let mut d = Dev::new(rt, dev);
    d.flush()?;
    let s = d.start(0);
    let a = pattern(s, 4, d.lba, 29);
    d.write_r(s, &a, IoFlags::FUA)
        .map_err(|e| format!("FUA write: {e}"))?;
    let b = d.write(s + 4, 4, 30)?;
    d.flush()?;
    d.read_back(s, &[a, b].concat(), "data after the flush")?;
    d.flush()
}
