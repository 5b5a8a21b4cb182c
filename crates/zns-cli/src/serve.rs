//! `zns serve`: emulated devices as Linux block devices through ublk
//! (zns-serve, docs/serve.md), or with `--nvme-tcp ADDR:PORT` as NVMe over
//! Fabrics controllers on TCP (zns-nvmeof, docs/nvme-tcp.md). For ublk it
//! checks the environment (ublk_drv, kernel, root) first; it opens the
//! targets on the paced runtime thread, adds one ublk device per namespace
//! (or one NVM subsystem per target, a namespace per namespace), prints
//! their paths (NQNs) and geometry, and serves until SIGINT or SIGTERM,
//! then removes every device it added.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use clap::Args;
use serde_json::json;
use zns_device::StoreKind;
use zns_nvmeof::{Export, NvmeTcpServer};
use zns_serve::{Host, HostConfig, HostedDevice, Opened, UblkDevice, UblkOptions};
use zns_sim::timing::HostStack;
use zns_target::{open, OpenOptions, OpenedDevice, TargetError, TargetSpec};

use crate::{host_stack_arg, set_overrides, CliError};

pub const SERVE_HELP: &str = "\
Each TARGET is a device name as everywhere in zns (docs/targets.md): a
built-in profile (zn540, zn540-cns, sn540, tiny, ...), a profile TOML file,
a device image made by `zns create` (its zones and data persist across
runs; FUA and flushed writes survive a kill -9 of the server), or a RAID
array (raid:5xzn540,variant=zraid; raid:m0.img,m1.img,m2.img on member
images keeps the array across runs and recovers it after a kill -9). Every namespace of an emulated
controller becomes one device: a zoned namespace a host-managed zoned block
device (/dev/ublkbN: zone report, open, close, finish, reset, append, flush,
FUA; the geometry and limits of the profile), a conventional namespace a
regular block device with discard. Profiles and arrays keep their data in
memory for the life of the server.

Needs Linux >= 6.6 with the ublk_drv module loaded (modprobe ublk_drv) and
root. Timing follows the emulated device paced to the wall clock
(--speed F: F times real time); ZRWA and NVMe passthrough are not carried by
the block layer (docs/serve.md).

Examples:
  sudo zns serve zn540 --zones 64                one ZN540 with 64 zones
  sudo mkfs.btrfs -O zoned -d single -m single /dev/ublkb0
  sudo zns serve zn540-cns --zones 64            F2FS: metadata on the
  sudo mkfs.f2fs -m -c /dev/ublkb1 /dev/ublkb0   conventional namespace
  sudo zns serve raid:5xzn540 --zones 32 --json  a ZRAID array as one device
  sudo zns serve dev.img                         an image keeps its data
  sudo zns serve raid:5xzn540 --stats s.json     at the stop: requests by kind,
                                                 the array's flash WAF, ...
  zns serve --nvme-tcp 127.0.0.1:4420 zn540      an NVMe/TCP controller (ZRWA,
  sudo nvme connect -t tcp -a 127.0.0.1 -s 4420 -n NQN   passthrough; any user,
                                                 no ublk; docs/nvme-tcp.md)";

#[derive(Args)]
pub struct ServeArgs {
    /// Devices to serve: profile names, profile TOML files, device images, raid:… arrays.
    #[arg(required = true, value_name = "TARGET")]
    targets: Vec<String>,
    /// Number of zones of each profile's first zoned namespace (each array member's).
    #[arg(long)]
    zones: Option<u32>,
    /// Override any profile value by its TOML path, e.g. --set namespace.0.max_open_zones=8 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Pacing: the emulated device runs at F times real time (0.5 = half speed).
    #[arg(long, default_value_t = 1.0, value_name = "F")]
    speed: f64,
    /// Host stack whose overheads the emulated device adds (device: none, as the kernel in front is real; spdk, io-uring-none, io-uring-mq-deadline).
    #[arg(long, default_value = "device", value_name = "STACK")]
    host_stack: String,
    /// Requests in flight per device (the ublk queue depth).
    #[arg(long, default_value_t = 64, value_name = "N")]
    queue_depth: u16,
    /// The runtime's seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print the devices as one JSON document (then serve).
    #[arg(long)]
    json: bool,
    /// Serve NVMe over Fabrics on TCP at ADDR:PORT instead of ublk: one NVM
    /// subsystem per target (its NQN printed), each namespace a namespace
    /// (zoned with ZRWA, or conventional), for `nvme connect -t tcp`.
    #[arg(long, value_name = "ADDR:PORT")]
    nvme_tcp: Option<SocketAddr>,
    /// At the stop, write what was served to FILE as JSON: each device's
    /// requests by kind (count, bytes, failures), the virtual time, the
    /// devices' own counters (an array's flash WAF and partial parity).
    #[arg(long, value_name = "FILE")]
    stats: Option<std::path::PathBuf>,
}

pub fn serve(args: ServeArgs) -> Result<ExitCode, CliError> {
    let host_stack = host_stack_arg(&args.host_stack)?;
    if !(args.speed.is_finite() && args.speed > 0.0) {
        return Err(CliError::Usage(format!(
            "--speed {}: must be a positive number",
            args.speed
        )));
    }
    if args.queue_depth == 0 || args.queue_depth > 4096 {
        return Err(CliError::Usage(format!(
            "--queue-depth {}: must be 1..=4096",
            args.queue_depth
        )));
    }
    let overrides = set_overrides(&args.set)?;
    let mut specs = Vec::new();
    for name in &args.targets {
        let spec = TargetSpec::parse(name).map_err(|e| CliError::Input(format!("{name}: {e}")))?;
        let mut all = overrides.clone();
        if let Some(zones) = args.zones {
            all.push(zones_override(&spec, name, zones)?);
        }
        let spec = spec
            .with_overrides(&all)
            .map_err(|e| CliError::Input(format!("{name}: {e}")))?;
        specs.push((name.clone(), spec));
    }
    if let Some(addr) = args.nvme_tcp {
        return serve_nvme_tcp(&args, addr, specs, host_stack);
    }
    check_environment()?;

    // the signals are blocked before any thread starts, so every thread
    // inherits the mask and only sigwait below takes them
    let signals = block_stop_signals();
    let ublk_opts = UblkOptions {
        queue_depth: args.queue_depth,
        ..UblkOptions::default()
    };
    let cfg = HostConfig {
        seed: args.seed,
        speed: args.speed,
        io_buf_bytes: ublk_opts.io_buf_bytes,
    };
    let mut host = Host::start(cfg, move |rt| open_all(rt, &specs, host_stack, None))
        .map_err(|e| CliError::Input(e.to_string()))?;
    for dead in zns_serve::remove_dead_devices() {
        match dead.outcome {
            Ok(()) => eprintln!(
                "zns serve: removed ublk device {}, left dead by a server that is gone",
                dead.dev_id
            ),
            Err(why) => eprintln!(
                "zns serve: ublk device {} was left dead by a server that is gone and stays: {why}",
                dead.dev_id
            ),
        }
    }
    let mut served = Vec::new();
    for (i, dev) in host.devices().iter().enumerate() {
        match UblkDevice::add(dev, host.link(i), ublk_opts) {
            Ok(u) => served.push(u),
            Err(e) => {
                // nothing half set up: the devices added so far go too
                drop(served);
                host.stop();
                return Err(CliError::Io(e.to_string()));
            }
        }
    }
    print_devices(host.devices(), &served, &args)?;
    let signal = wait_for(&signals);
    eprintln!("zns serve: {signal}: removing the devices");
    let paths: Vec<String> = served.iter().map(|u| u.block_path.clone()).collect();
    for mut u in served {
        u.stop();
    }
    let Some(report) = host.stop() else {
        return Err(CliError::Io(
            "the devices' runtime ended without a report (see the messages above)".into(),
        ));
    };
    eprint!("{}", stats_summary(&report, &paths));
    write_stats(&args, report, &paths)?;
    Ok(ExitCode::SUCCESS)
}

/// `--nvme-tcp`: the targets as NVM subsystems on a TCP port.
fn serve_nvme_tcp(
    args: &ServeArgs,
    addr: SocketAddr,
    specs: Vec<(String, TargetSpec)>,
    host_stack: HostStack,
) -> Result<ExitCode, CliError> {
    let signals = block_stop_signals();
    let cfg = HostConfig {
        seed: args.seed,
        speed: args.speed,
        io_buf_bytes: UblkOptions::default().io_buf_bytes,
    };
    let names: Vec<String> = specs.iter().map(|(n, _)| n.clone()).collect();
    let groups = Arc::new(Mutex::new(Vec::new()));
    let counted = groups.clone();
    let mut host = Host::start(cfg, move |rt| {
        open_all(rt, &specs, host_stack, Some(&counted))
    })
    .map_err(|e| CliError::Input(e.to_string()))?;
    let sizes: Vec<usize> = groups.lock().map(|g| g.clone()).unwrap_or_default();
    let mut exports = Vec::new();
    let mut first = 0;
    let mut nqns = Vec::new();
    for (i, (name, size)) in names.iter().zip(sizes).enumerate() {
        let nqn = subsystem_nqn(name, i, &nqns);
        let links = (first..first + size).map(|d| host.link(d)).collect();
        let export = Export::probe(&nqn, name, links).map_err(|e| CliError::Io(e.to_string()))?;
        nqns.push(nqn);
        exports.push((first, export));
        first += size;
    }
    let firsts: Vec<usize> = exports.iter().map(|(f, _)| *f).collect();
    let exports: Vec<Export> = exports.into_iter().map(|(_, e)| e).collect();
    let subsystems: Vec<zns_nvmeof::Subsystem> =
        exports.iter().map(|e| e.subsystem.clone()).collect();
    let mut server = NvmeTcpServer::start(addr, exports)
        .map_err(|e| CliError::Io(format!("--nvme-tcp {addr}: {e}")))?;
    let at = server.local_addr();
    print_subsystems(host.devices(), &subsystems, &firsts, at, args)?;
    let signal = wait_for(&signals);
    eprintln!("zns serve: {signal}: closing the NVMe/TCP target");
    server.stop();
    let Some(report) = host.stop() else {
        return Err(CliError::Io(
            "the devices' runtime ended without a report (see the messages above)".into(),
        ));
    };
    eprintln!(
        "zns serve: served {:.3} s of device time",
        report.virtual_ns as f64 / 1e9
    );
    // each served device by its subsystem and namespace
    let labels: Vec<String> = subsystems
        .iter()
        .flat_map(|s| {
            s.namespaces
                .iter()
                .map(|ns| format!("{} nsid {}", s.identity.subnqn, ns.nsid))
        })
        .collect();
    write_stats(args, report, &labels)?;
    Ok(ExitCode::SUCCESS)
}

/// The NQN of the `index`th target: `nqn.2026-11.org.znskit:` and the
/// target's name in NQN characters (a duplicate gets its index).
fn subsystem_nqn(name: &str, index: usize, taken: &[String]) -> String {
    let base = std::path::Path::new(name)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let clean: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .take(160)
        .collect();
    let nqn = format!("nqn.2026-11.org.znskit:{clean}");
    if taken.contains(&nqn) {
        format!("{nqn}-{index}")
    } else {
        nqn
    }
}

fn print_subsystems(
    devices: &[HostedDevice],
    subsystems: &[zns_nvmeof::Subsystem],
    firsts: &[usize],
    addr: SocketAddr,
    args: &ServeArgs,
) -> Result<(), CliError> {
    if args.json {
        let list: Vec<_> = subsystems
            .iter()
            .zip(firsts)
            .map(|(s, &first)| {
                let namespaces: Vec<_> = s
                    .namespaces
                    .iter()
                    .zip(&devices[first..])
                    .map(|(ns, d)| {
                        json!({
                            "nsid": ns.nsid,
                            "target": d.name,
                            "zoned": d.geometry.zoned.is_some(),
                            "zrwa": ns.zoned().is_some_and(|c| c.zrwa.is_some()),
                            "geometry": d.geometry,
                        })
                    })
                    .collect();
                json!({ "nqn": s.identity.subnqn, "namespaces": namespaces })
            })
            .collect();
        let doc = json!({
            "speed": args.speed,
            "nvme_tcp": { "address": addr.to_string(), "subsystems": list },
        });
        outln!("{doc}");
    } else {
        let mut text = String::new();
        for (s, &first) in subsystems.iter().zip(firsts) {
            text += &format!(
                "{}  at {addr} (nvme connect -t tcp -a {} -s {} -n {})\n",
                s.identity.subnqn,
                addr.ip(),
                addr.port(),
                s.identity.subnqn
            );
            for (ns, d) in s.namespaces.iter().zip(&devices[first..]) {
                let what = match ns.zoned() {
                    Some(c) => format!(
                        "zoned, {} zones of {} LBAs (capacity {}), {}",
                        c.zone_count,
                        c.zone_size_lbas,
                        c.zone_capacity_lbas,
                        if c.zrwa.is_some() { "ZRWA" } else { "no ZRWA" }
                    ),
                    None => format!("conventional, {} LBAs", ns.capacity_lbas()),
                };
                text += &format!(
                    "  nsid {}  {}: {what}, {} B blocks\n",
                    ns.nsid,
                    d.name,
                    ns.lba_bytes()
                );
            }
        }
        out!("{text}");
    }
    eprintln!(
        "zns serve: serving {} NVMe/TCP subsystem(s) on {addr} at {}x real time; Ctrl-C or SIGTERM stops",
        subsystems.len(),
        args.speed
    );
    Ok(())
}

/// `--stats FILE`: the report, each served device with its path or NQN.
fn write_stats(
    args: &ServeArgs,
    report: zns_serve::HostReport,
    paths: &[String],
) -> Result<(), CliError> {
    if let Some(file) = &args.stats {
        let mut doc = serde_json::to_value(&report).map_err(|e| CliError::Io(e.to_string()))?;
        doc["speed"] = json!(args.speed);
        for (d, path) in doc["served"]
            .as_array_mut()
            .into_iter()
            .flatten()
            .zip(paths)
        {
            d["path"] = json!(path);
        }
        std::fs::write(file, format!("{doc:#}\n"))
            .map_err(|e| CliError::Io(format!("--stats {}: {e}", file.display())))?;
    }
    Ok(())
}

/// One line per served device: its requests by kind.
fn stats_summary(report: &zns_serve::HostReport, paths: &[String]) -> String {
    let mut text = format!(
        "zns serve: served {:.3} s of device time\n",
        report.virtual_ns as f64 / 1e9
    );
    for (d, path) in report.served.iter().zip(paths) {
        let kinds: Vec<String> = d
            .requests
            .by_kind
            .iter()
            .map(|(k, c)| match c.failed {
                0 => format!("{k} {}", c.requests),
                f => format!("{k} {} ({f} failed)", c.requests),
            })
            .collect();
        let kinds = if kinds.is_empty() {
            "no requests".to_string()
        } else {
            kinds.join(", ")
        };
        text += &format!("  {path} {}: {kinds}\n", d.name);
    }
    text
}

/// `--zones N` as an override of the first zoned namespace's zone count
/// (of each member, for an array).
fn zones_override(spec: &TargetSpec, name: &str, zones: u32) -> Result<(String, String), CliError> {
    let profile = match spec {
        TargetSpec::Profile(p) => p.as_ref(),
        TargetSpec::Raid(r) => r.members.first().ok_or_else(|| {
            CliError::Usage(format!(
                "--zones: the members of {name} are device images, which have their geometry already"
            ))
        })?,
        TargetSpec::Image(_) | TargetSpec::Linux(_) => {
            return Err(CliError::Usage(format!(
                "--zones: {name} has its geometry already (an image or a real device)"
            )))
        }
    };
    let ns = profile
        .first_zoned()
        .ok_or_else(|| CliError::Usage(format!("--zones: {name} has no zoned namespace")))?;
    Ok((format!("namespace.{ns}.zone_count"), zones.to_string()))
}

/// Runs on the runtime thread: opens every target and lists its namespaces.
/// `groups` (for `--nvme-tcp`) gets each target's namespace count.
fn open_all(
    rt: &mut zns_sim::Runtime,
    specs: &[(String, TargetSpec)],
    host_stack: HostStack,
    groups: Option<&Mutex<Vec<usize>>>,
) -> Result<Opened, TargetError> {
    let opts = OpenOptions {
        store: StoreKind::Memory,
        host_stack,
    };
    let mut served = Vec::new();
    let mut keep: Vec<(String, OpenedDevice)> = Vec::new();
    for (name, spec) in specs {
        let dev = open(rt, spec, &opts).map_err(|e| e.context(name.clone()))?;
        let namespaces: Vec<Option<u32>> = match &dev {
            OpenedDevice::Controller(c) => (1..=c.namespace_count()).map(Some).collect(),
            _ => vec![None],
        };
        let several = namespaces.len() > 1;
        if let Some(g) = groups {
            if let Ok(mut g) = g.lock() {
                g.push(namespaces.len());
            }
        }
        for nsid in namespaces {
            let target = dev.target(name, nsid)?;
            let label = match nsid {
                Some(n) if several => format!("{name} nsid {n}"),
                _ => name.clone(),
            };
            served.push((label, target));
        }
        keep.push((name.clone(), dev));
    }
    let keep = Rc::new(keep);
    let at_stop = keep.clone();
    Ok(Opened {
        served,
        keep_alive: Box::new(keep),
        finish: Box::new(move |rt: &mut zns_sim::Runtime| finish_all(rt, &at_stop)),
    })
}

/// At the stop: every device shut down cleanly (an array logs its write
/// pointers, so that its member images reopen where they were), then its
/// counters, by target name.
fn finish_all(rt: &mut zns_sim::Runtime, devices: &[(String, OpenedDevice)]) -> serde_json::Value {
    let mut doc = serde_json::Map::new();
    for (name, dev) in devices {
        if let Err(e) = rt.block_on(dev.shutdown()) {
            eprintln!("zns serve: {name}: shutdown: {e}");
        }
        doc.insert(name.clone(), dev.stats_json());
    }
    serde_json::Value::Object(doc)
}

fn print_devices(
    devices: &[HostedDevice],
    served: &[UblkDevice],
    args: &ServeArgs,
) -> Result<(), CliError> {
    if args.json {
        let list: Vec<_> = devices
            .iter()
            .zip(served)
            .map(|(d, u)| {
                json!({
                    "target": d.name,
                    "path": u.block_path,
                    "dev_id": u.dev_id,
                    "zoned": d.geometry.zoned.is_some(),
                    "geometry": d.geometry,
                })
            })
            .collect();
        let doc = json!({ "speed": args.speed, "devices": list });
        outln!("{doc}");
    } else {
        let mut text = String::new();
        for (d, u) in devices.iter().zip(served) {
            let g = &d.geometry;
            let mib = |b: u64| b as f64 / 1048576.0;
            let what = match &g.zoned {
                Some(z) => format!(
                    "zoned, {} zones of {:.0} MiB (capacity {:.0} MiB), {} open / {} active (0 = no limit), append <= {} KiB",
                    z.zones,
                    mib(z.zone_bytes),
                    mib(z.zone_capacity_bytes),
                    z.max_open_zones,
                    z.max_active_zones,
                    z.max_append_bytes / 1024
                ),
                None => format!("conventional, {:.0} MiB, discard", mib(g.capacity_bytes)),
            };
            text += &format!(
                "{}  {}: {}, {} B blocks, requests <= {} KiB\n",
                u.block_path,
                d.name,
                what,
                g.lba_bytes,
                g.max_io_bytes / 1024
            );
        }
        out!("{text}");
    }
    eprintln!(
        "zns serve: serving {} device(s) at {}x real time; Ctrl-C or SIGTERM stops",
        served.len(),
        args.speed
    );
    Ok(())
}

/// What `zns serve` needs from the machine, each missing piece named.
fn check_environment() -> Result<(), CliError> {
    let release = kernel_release();
    if let Some((major, minor)) = release.as_deref().and_then(kernel_version) {
        if (major, minor) < (6, 6) {
            return Err(CliError::Io(format!(
                "Linux {} is too old: ublk serves zoned devices from Linux 6.6 on (CONFIG_BLK_DEV_UBLK, CONFIG_BLK_DEV_ZONED)",
                release.unwrap_or_default()
            )));
        }
    }
    if !std::path::Path::new("/dev/ublk-control").exists() {
        return Err(CliError::Io(format!(
            "no /dev/ublk-control: load the ublk driver (`modprobe ublk_drv`; Linux >= 6.6 built with CONFIG_BLK_DEV_UBLK{})",
            release.map(|r| format!(", this is {r}")).unwrap_or_default()
        )));
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(CliError::Io(
            "zns serve needs root: zoned ublk devices use user copy (UBLK_F_USER_COPY), which unprivileged ublk devices may not"
                .into(),
        ));
    }
    Ok(())
}

fn kernel_release() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .ok()
        .map(|s| s.trim().to_string())
}

/// `6.12.95+deb12-amd64` → (6, 12).
fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// SIGINT and SIGTERM, blocked in this thread (and so in every thread it
/// starts later), to be taken by [`wait_for`].
fn block_stop_signals() -> libc::sigset_t {
    // SAFETY: a zeroed sigset_t is a valid argument to sigemptyset, which
    // initialises it; the mask calls take valid pointers.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}

/// Waits for one of the blocked stop signals; its name.
fn wait_for(set: &libc::sigset_t) -> &'static str {
    let mut sig: libc::c_int = 0;
    // SAFETY: `set` was initialised by block_stop_signals; `sig` is a live int.
    while unsafe { libc::sigwait(set, &mut sig) } != 0 {}
    if sig == libc::SIGINT {
        "SIGINT"
    } else {
        "SIGTERM"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_versions_are_read_from_the_release() {
        assert_eq!(kernel_version("6.12.95+deb12-amd64"), Some((6, 12)));
        assert_eq!(kernel_version("6.1.0-56-amd64"), Some((6, 1)));
        assert_eq!(kernel_version("5.19"), Some((5, 19)));
        assert_eq!(kernel_version("garbage"), None);
    }
}
