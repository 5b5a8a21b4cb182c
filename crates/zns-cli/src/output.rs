//! Text renderings for the terminal: zone reports in the style of
//! `nvme zns report-zones`, profile summaries, trace results and probe tables.

use std::fmt::Write;

use zns_core::ZoneDescriptor;
use zns_device::probe::ProbeReport;
use zns_device::trace::TraceResult;
use zns_device::{NamespaceProfile, Profile};

pub fn report_text(zones: &[ZoneDescriptor]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "nr_zones: {}", zones.len());
    for z in zones {
        let _ = writeln!(
            s,
            "SLBA: {:<#12x} WP: {:<#12x} Cap: {:<#9x} State: {:<10} Type: SEQWRITE_REQ   Attrs: {:#x}{}",
            z.start_lba,
            z.write_pointer,
            z.capacity_lbas,
            z.state.nvme_cli_name(),
            (z.attributes.finished_by_controller as u8) | ((z.attributes.zrwa_valid as u8) << 3),
            if z.attributes.zrwa_valid { " (ZRWA)" } else { "" }
        );
    }
    s
}

/// A byte count in the unit that shows it best: KiB below 1 MiB, MiB below
/// 10 GiB, else GiB (`768 KiB`, `1077 MiB`, `67.3 GiB`).
fn human_bytes(bytes: u64) -> String {
    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;
    if bytes < MIB {
        format!("{} KiB", bytes as f64 / KIB as f64)
    } else if bytes < 10 * GIB {
        format!("{:.0} MiB", bytes as f64 / MIB as f64)
    } else {
        format!("{:.1} GiB", bytes as f64 / GIB as f64)
    }
}

pub fn profile_text(p: &Profile) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}: {}", p.name, p.description);
    for (i, ns) in p.namespaces.iter().enumerate() {
        match ns {
            NamespaceProfile::Zoned(z) => {
                let lba = z.lba_bytes as u64;
                let _ = writeln!(s, "nsid {}: zoned, {} B LBAs", i + 1, z.lba_bytes);
                let _ = writeln!(
                    s,
                    "  zones            {} × {} (capacity {}), {} writable",
                    z.zone_count,
                    human_bytes(z.zone_size_lbas * lba),
                    human_bytes(z.zone_capacity_lbas * lba),
                    human_bytes(z.zone_count as u64 * z.zone_capacity_lbas * lba)
                );
                let lim = |v: u32| {
                    if v == 0 {
                        "unlimited".to_string()
                    } else {
                        v.to_string()
                    }
                };
                let _ = writeln!(
                    s,
                    "  open / active    {} / {}",
                    lim(z.max_open_zones),
                    lim(z.max_active_zones)
                );
                let _ = writeln!(
                    s,
                    "  MDTS / ZASL      {} KiB / {} KiB",
                    z.max_transfer_lbas as u64 * lba / 1024,
                    z.append_limit_lbas() as u64 * lba / 1024
                );
                let _ = writeln!(
                    s,
                    "  auto-close       {}",
                    if z.auto_close_implicit {
                        "oldest implicitly opened zone"
                    } else {
                        "off"
                    }
                );
                let _ = writeln!(
                    s,
                    "  cross-zone reads {}",
                    if z.read_across_zone_boundary {
                        "allowed"
                    } else {
                        "rejected"
                    }
                );
                match &z.zrwa {
                    Some(w) => {
                        let _ = writeln!(
                            s,
                            "  ZRWA             {} KiB, flush granularity {} KiB, {} resources",
                            w.size_lbas * lba / 1024,
                            w.flush_granularity_lbas * lba / 1024,
                            w.resources
                        );
                    }
                    None => {
                        let _ = writeln!(s, "  ZRWA             not supported");
                    }
                }
            }
            NamespaceProfile::Conventional(c) => {
                let _ = writeln!(
                    s,
                    "nsid {}: conventional, {} B LBAs, {}",
                    i + 1,
                    c.lba_bytes,
                    human_bytes(c.capacity_lbas * c.lba_bytes as u64)
                );
            }
        }
    }
    let pl = &p.power_loss;
    let has_zrwa = p
        .namespaces
        .iter()
        .any(|n| matches!(n, NamespaceProfile::Zoned(z) if z.zrwa.is_some()));
    let zrwa = if has_zrwa {
        format!(", ZRWA {:?}", pl.zrwa)
    } else {
        String::new()
    };
    let _ = writeln!(
        s,
        "power loss: completed-unflushed {:?}, in-flight {:?}{zrwa}",
        pl.completed_unflushed, pl.in_flight
    );
    let _ = writeln!(
        s,
        "(zns info --profile {} --toml shows every timing parameter)",
        p.name
    );
    s
}

pub fn trace_result_text(r: &TraceResult) -> String {
    let mut s = String::new();
    let status = if r.status.is_success() {
        "Success".to_string()
    } else {
        format!(
            "{} (SCT {:X}h SC {:02X}h){}",
            r.status.name,
            r.status.sct,
            r.status.sc,
            if r.status.injected { " [injected]" } else { "" }
        )
    };
    let _ = write!(
        s,
        "line {:>4} {:<11} {:<50} {:>10.2} us",
        r.line,
        r.op,
        status,
        r.latency_ns as f64 / 1000.0
    );
    if let Some(lba) = r.assigned_lba {
        let _ = write!(s, "  lba {lba:#x}");
    }
    if let Some(stamps) = &r.stamps {
        let tags: Vec<String> = stamps
            .iter()
            .map(|t| t.map_or("-".into(), |v| v.to_string()))
            .collect();
        let _ = write!(s, "  stamps [{}]", tags.join(" "));
    }
    let _ = writeln!(s);
    for z in &r.zones {
        let _ = writeln!(
            s,
            "           zone {:#x}: {:<10} wp {:#x} cap {:#x}{}",
            z.start_lba,
            z.state.nvme_cli_name(),
            z.write_pointer,
            z.capacity_lbas,
            if z.attributes.zrwa_valid { " ZRWA" } else { "" }
        );
    }
    s
}

pub fn probe_text(r: &ProbeReport) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "probe of profile {} (virtual time, QD1)", r.profile);
    for f in &r.figures {
        let _ = writeln!(
            s,
            "  {:<42} {:>12.2} {:<3} {}",
            f.id, f.value, f.unit, f.desc
        );
    }
    s
}

/// `zns zone report --json`: the shape of `nvme zns report-zones -o json`
/// (`nr_zones`, `zone_list` with `slba`, `wp`, `cap`, `state`, `type`, `attrs`),
/// so scripts written for nvme-cli parse it.
pub fn report_json(zones: &[ZoneDescriptor]) -> serde_json::Value {
    let list: Vec<serde_json::Value> = zones.iter().map(zone_json).collect();
    serde_json::json!({ "nr_zones": zones.len(), "zone_list": list })
}

/// One zone as every `--json` output of zns shows it: nvme-cli's
/// report-zones entry.
pub fn zone_json(z: &ZoneDescriptor) -> serde_json::Value {
    serde_json::json!({
        "slba": z.start_lba,
        "wp": z.write_pointer,
        "cap": z.capacity_lbas,
        "state": z.state.nvme_cli_name(),
        "type": "SEQWRITE_REQ",
        "attrs": (z.attributes.finished_by_controller as u8) | ((z.attributes.zrwa_valid as u8) << 3),
    })
}

/// `zns replay --json`: one trace result, its zones as `zone report --json`
/// shows them.
pub fn trace_result_json(r: &TraceResult) -> serde_json::Value {
    let mut v = serde_json::to_value(r).unwrap_or(serde_json::Value::Null);
    v["zones"] = serde_json::Value::Array(r.zones.iter().map(zone_json).collect());
    v
}
