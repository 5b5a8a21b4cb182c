//! The device a job runs against: a zoned or a conventional namespace of an
//! emulated controller, opened from a profile name, a profile TOML file or a
//! device image (`filename=`), a RAID array of emulated ZNS devices
//! (`filename=raid:…`, see [`RaidSpec`]), or a real Linux zoned block device
//! (a filename under `/dev/`, or `linux:PATH`: zns-linux), with its geometry
//! in bytes. One device is opened per distinct filename in a run and shared
//! by the jobs naming it, so jobs on one device contend for the same flash.

use std::collections::BTreeMap;
use std::path::Path;
use std::rc::Rc;

use zns_core::{BlockDevice, IoFlags, NvmeError, ZonedDevice, ZrwaConfig};
use zns_device::{
    Controller, ControllerOptions, EmulatedConventionalNs, EmulatedZns, Profile, StoreKind,
};
use zns_raid::{Policy, RaidArray, RaidOptions, RaidStats, Variant};
use zns_sim::timing::HostStack;
use zns_sim::{Handle, Runtime};

/// A namespace jobs read and write.
#[derive(Clone)]
pub enum Target {
    Zoned(EmulatedZns),
    Block(EmulatedConventionalNs),
    /// A RAID array of emulated ZNS devices: itself a zoned device.
    Raid(RaidArray),
    /// Any other zoned device: a real Linux zoned block device.
    Device(Rc<dyn ZonedDevice>),
}

/// Geometry of a target in bytes.
#[derive(Debug, Clone)]
pub struct Geometry {
    pub lba_bytes: u64,
    pub capacity_bytes: u64,
    /// Zone size (0 on a conventional namespace).
    pub zone_bytes: u64,
    /// Writable capacity of a zone (0 on a conventional namespace).
    pub zone_cap_bytes: u64,
    pub zone_count: u64,
    /// Open-zone limit (0 = none).
    pub max_open_zones: u32,
    pub max_transfer_bytes: u64,
    pub zrwa: Option<ZrwaConfig>,
}

impl Target {
    /// Sets the host stack the job's I/O goes through. A RAID array is a
    /// bio-based logical device (like a device-mapper target): it has no
    /// scheduler of its own and orders writes as they are submitted; its
    /// members' stack is chosen by the array's variant (`RaidSpec`).
    pub fn set_host_stack(&self, stack: HostStack) {
        match self {
            Target::Zoned(z) => z.controller().set_host_stack(stack),
            Target::Block(b) => b.controller().set_host_stack(stack),
            // An array's members take theirs from the variant; a real
            // device's host stack is the kernel's own.
            Target::Raid(_) | Target::Device(_) => {}
        }
    }

    pub fn zoned(&self) -> Option<&dyn ZonedDevice> {
        match self {
            Target::Zoned(z) => Some(z),
            Target::Raid(r) => Some(r),
            Target::Block(_) => None,
            Target::Device(d) => Some(d.as_ref()),
        }
    }

    /// The device accepts several writes in flight in one zone, in
    /// submission order (a RAID array: the logical write pointer moves at
    /// submission).
    pub fn orders_zone_writes(&self) -> bool {
        self.zoned().is_some_and(|z| z.orders_zone_writes())
    }

    pub fn geometry(&self) -> Geometry {
        match self {
            Target::Zoned(_) | Target::Raid(_) | Target::Device(_) => {
                let c = self.zoned().expect("zoned").config();
                let lba = u64::from(c.lba_bytes);
                Geometry {
                    lba_bytes: lba,
                    capacity_bytes: c.zone_size_lbas * lba * u64::from(c.zone_count),
                    zone_bytes: c.zone_size_lbas * lba,
                    zone_cap_bytes: c.zone_capacity_lbas * lba,
                    zone_count: u64::from(c.zone_count),
                    max_open_zones: c.max_open_zones,
                    max_transfer_bytes: u64::from(c.max_transfer_lbas) * lba,
                    zrwa: c.zrwa,
                }
            }
            Target::Block(b) => {
                let lba = u64::from(b.lba_bytes());
                Geometry {
                    lba_bytes: lba,
                    capacity_bytes: b.capacity_lbas() * lba,
                    zone_bytes: 0,
                    zone_cap_bytes: 0,
                    zone_count: 0,
                    max_open_zones: 0,
                    max_transfer_bytes: u64::from(b.max_transfer_lbas()) * lba,
                    zrwa: None,
                }
            }
        }
    }

    pub async fn read(&self, slba: u64, buf: &mut [u8]) -> Result<(), NvmeError> {
        match self {
            Target::Zoned(z) => z.read(slba, buf).await,
            Target::Raid(r) => r.read(slba, buf).await,
            Target::Block(b) => b.read(slba, buf).await,
            Target::Device(d) => d.read(slba, buf).await,
        }
    }

    pub async fn write(&self, slba: u64, data: &[u8]) -> Result<(), NvmeError> {
        match self {
            Target::Zoned(z) => z.write(slba, data, IoFlags::NONE).await,
            Target::Raid(r) => r.write(slba, data, IoFlags::NONE).await,
            Target::Block(b) => b.write(slba, data, IoFlags::NONE).await,
            Target::Device(d) => d.write(slba, data, IoFlags::NONE).await,
        }
    }

    pub async fn flush(&self) -> Result<(), NvmeError> {
        match self {
            Target::Zoned(z) => z.flush().await,
            Target::Raid(r) => r.flush().await,
            Target::Block(b) => b.flush().await,
            Target::Device(d) => d.flush().await,
        }
    }
}

/// Controllers and arrays opened so far in a run, by filename.
#[derive(Default)]
pub struct Devices {
    controllers: BTreeMap<String, Controller>,
    arrays: BTreeMap<String, (RaidArray, Vec<Controller>)>,
    real: BTreeMap<String, Rc<dyn ZonedDevice>>,
}

impl Devices {
    /// The namespace `nsid` (default: the first zoned one, else NSID 1) of the
    /// controller `filename` names, or the array a `raid:` filename describes,
    /// opening it on first use (an array is created on `rt`: its members are
    /// formatted).
    pub fn target(
        &mut self,
        rt: &mut Runtime,
        filename: &str,
        nsid: Option<u32>,
    ) -> Result<Target, String> {
        let handle = rt.handle();
        if let Some(spec) = filename.strip_prefix("raid:") {
            if let Some(n) = nsid {
                if n != 1 {
                    return Err(format!("nsid={n}: a RAID array has namespace 1 only"));
                }
            }
            if !self.arrays.contains_key(filename) {
                let spec: RaidSpec = spec
                    .parse()
                    .map_err(|e| format!("filename={filename}: {e}"))?;
                let built = spec
                    .build(rt)
                    .map_err(|e| format!("filename={filename}: {e}"))?;
                self.arrays.insert(filename.to_string(), built);
            }
            return Ok(Target::Raid(self.arrays[filename].0.clone()));
        }
        if let Some(path) = zns_linux::device_path(filename) {
            if let Some(n) = nsid {
                return Err(format!("nsid={n}: {filename} is one namespace already"));
            }
            if !self.real.contains_key(filename) {
                let dev = open_real(&handle, path)?;
                self.real.insert(filename.to_string(), dev);
            }
            return Ok(Target::Device(self.real[filename].clone()));
        }
        if !self.controllers.contains_key(filename) {
            let ctrl = open_controller(&handle, filename)?;
            self.controllers.insert(filename.to_string(), ctrl);
        }
        let ctrl = &self.controllers[filename];
        let count = ctrl.namespace_count();
        match nsid {
            Some(n) => {
                if let Some(z) = ctrl.zoned(n) {
                    Ok(Target::Zoned(z))
                } else if let Some(b) = ctrl.conventional(n) {
                    Ok(Target::Block(b))
                } else {
                    Err(format!(
                        "nsid={n}: {filename} has namespaces 1..={count} only"
                    ))
                }
            }
            None => ctrl
                .first_zoned()
                .map(Target::Zoned)
                .or_else(|| ctrl.conventional(1).map(Target::Block))
                .ok_or_else(|| format!("{filename} has no namespace")),
        }
    }

    /// Every controller of the run, RAID members included.
    pub fn controllers(&self) -> impl Iterator<Item = &Controller> {
        self.controllers
            .values()
            .chain(self.arrays.values().flat_map(|(_, m)| m.iter()))
    }

    /// The counters of every RAID array of the run, by filename.
    pub fn raid_stats(&self) -> BTreeMap<String, RaidStats> {
        self.arrays
            .iter()
            .map(|(k, (a, _))| (k.clone(), a.stats()))
            .collect()
    }
}

/// A RAID array as a `filename`: `raid:` followed by comma-separated members
/// and options. A member is a device name as `filename=` takes it (built-in
/// profile or profile TOML file), optionally `N×` repeated: `5xzn540` (or
/// `5*zn540`). Options are `key=value`:
///
/// - `variant=raizn|raizn+|z|z+s|z+s+m|zraid` (default zraid),
/// - `chunk=64k` (chunk size, default 64 KiB),
/// - `policy=stripe|chunk|wplog` (default wplog),
/// - `stack=none|mq-deadline|spdk`: the members' host stack (default from the
///   variant: mq-deadline for raizn, raizn+ and z, none for the others),
/// - `aggregate=K`: each member presents K of its zones as one, interleaved
///   by its ZRWA size (the paper's PM1731a setup, §6.5),
/// - `worker_ns=N`: host ns a submission worker spends per logical write.
///
/// Example: `filename=raid:5xzn540,variant=raizn+,chunk=64k`.
#[derive(Debug, Clone, PartialEq)]
pub struct RaidSpec {
    pub members: Vec<String>,
    pub options: RaidOptions,
    pub member_stack: HostStack,
    /// Zones of a member aggregated into one (1 = none).
    pub aggregate: u32,
}

impl std::str::FromStr for RaidSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<RaidSpec, String> {
        let mut members = Vec::new();
        let mut options = RaidOptions::default();
        let mut stack: Option<HostStack> = None;
        let mut aggregate = 1u32;
        for item in s.split(',').map(str::trim).filter(|x| !x.is_empty()) {
            if let Some((k, v)) = item.split_once('=') {
                let v = v.trim();
                match k.trim() {
                    "variant" => options.variant = v.parse::<Variant>()?,
                    "chunk" => {
                        options.chunk_bytes = crate::job::parse_bytes(v)
                            .filter(|&b| b > 0)
                            .ok_or_else(|| format!("chunk={v}: not a size"))?
                    }
                    "policy" => options.policy = v.parse::<Policy>()?,
                    "stack" => {
                        stack = Some(v.parse().map_err(|e| format!("stack={v}: {e}"))?)
                    }
                    "aggregate" => {
                        aggregate = v
                            .parse()
                            .ok()
                            .filter(|&k| (1..=64).contains(&k))
                            .ok_or_else(|| format!("aggregate={v}: expected 1..=64 zones"))?
                    }
                    "worker_ns" => {
                        options.worker_ns_per_write = v
                            .parse()
                            .map_err(|_| format!("worker_ns={v}: not a number of ns"))?
                    }
                    other => {
                        return Err(format!(
                            "unknown RAID option {other:?} (options: variant, chunk, policy, stack, aggregate, worker_ns)"
                        ))
                    }
                }
                continue;
            }
            let (count, name) = match item.split_once(['x', '*']) {
                Some((n, name)) if !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) => {
                    let n: usize = n.parse().map_err(|_| format!("{item}: bad count"))?;
                    (n, name.trim())
                }
                _ => (1, item),
            };
            if count == 0 || count > 64 || name.is_empty() {
                return Err(format!("{item}: expected NxDEVICE with 1 ≤ N ≤ 64"));
            }
            members.extend(std::iter::repeat(name.to_string()).take(count));
        }
        if members.is_empty() {
            return Err(
                "no members (e.g. raid:5xzn540 or raid:zn540,zn540,zn540,variant=raizn+)".into(),
            );
        }
        let member_stack = stack.unwrap_or(if options.variant.members_mq_deadline() {
            HostStack::IoUringMqDeadline
        } else {
            HostStack::IoUringNone
        });
        Ok(RaidSpec {
            members,
            options,
            member_stack,
            aggregate,
        })
    }
}

impl RaidSpec {
    /// Opens the member controllers (no data kept) and creates the array.
    pub fn build(&self, rt: &mut Runtime) -> Result<(RaidArray, Vec<Controller>), String> {
        let mut profiles = Vec::new();
        for (i, m) in self.members.iter().enumerate() {
            if m.starts_with("raid:") {
                return Err(format!("member {i}: an array cannot be a member"));
            }
            let profile = Profile::load(m).map_err(|e| format!("member {i} ({m}): {e}"))?;
            profiles.push((m.clone(), profile));
        }
        let members = zns_raid::build::Members {
            profiles,
            host_stack: self.member_stack,
            // the members keep no data, so the array need not compute parity
            store: StoreKind::None,
            aggregate: self.aggregate,
        };
        let handle = rt.handle();
        rt.block_on(zns_raid::build::create_from_profiles(
            &handle,
            &members,
            self.options,
        ))
    }
}

fn open_controller(handle: &Handle, filename: &str) -> Result<Controller, String> {
    let builtin = Profile::builtin_names().contains(&filename);
    let path = Path::new(filename);
    if !builtin && path.is_file() && !filename.ends_with(".toml") {
        return Controller::open_image(handle, path, HostStack::Spdk)
            .map_err(|e| format!("cannot open device image {filename}: {e}"));
    }
    let profile = Profile::load(filename).map_err(|e| {
        format!(
            "filename={filename}: {e} (a filename is a built-in profile ({}), a profile TOML file or a device image made by `zns create`)",
            Profile::builtin_names().join(", ")
        )
    })?;
    let opts = ControllerOptions {
        store: StoreKind::None,
        host_stack: HostStack::Spdk,
    };
    Controller::new(handle, profile, opts).map_err(|e| format!("{filename}: {e}"))
}

/// Whether `filename` names a real device (the run then paces its runtime
/// to the wall clock, so that latencies are real).
pub fn is_real_device(filename: &str) -> bool {
    zns_linux::device_path(filename).is_some()
}

#[cfg(target_os = "linux")]
fn open_real(handle: &Handle, path: &str) -> Result<Rc<dyn ZonedDevice>, String> {
    zns_linux::LinuxZoned::open(handle, Path::new(path), zns_linux::LinuxOptions::default())
        .map(|d| Rc::new(d) as Rc<dyn ZonedDevice>)
        .map_err(|e| format!("filename={path}: {e}"))
}

#[cfg(not(target_os = "linux"))]
fn open_real(_handle: &Handle, path: &str) -> Result<Rc<dyn ZonedDevice>, String> {
    Err(format!(
        "filename={path}: real zoned block devices need Linux"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raid_specs_parse_members_and_options() {
        let s: RaidSpec = "5xzn540,variant=raizn+,chunk=64k".parse().unwrap();
        assert_eq!(s.members, vec!["zn540"; 5]);
        assert_eq!(s.options.variant, Variant::RaiznPlus);
        assert_eq!(s.options.chunk_bytes, 65536);
        assert_eq!(s.member_stack, HostStack::IoUringMqDeadline);
        let s: RaidSpec = "tiny,tiny,tiny,policy=chunk,stack=spdk".parse().unwrap();
        assert_eq!(s.members.len(), 3);
        assert_eq!(s.options.policy, Policy::Chunk);
        assert_eq!(s.options.variant, Variant::Zraid);
        assert_eq!(s.member_stack, HostStack::Spdk);
        for bad in [
            "",
            "variant=zraid",
            "5xzn540,foo=1",
            "0xzn540",
            "5xzn540,chunk=x",
        ] {
            assert!(bad.parse::<RaidSpec>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_raid_filename_opens_an_array_and_invalid_ones_are_refused() {
        let mut rt = Runtime::new(1);
        let mut d = Devices::default();
        let t = d.target(&mut rt, "raid:3xtiny,chunk=32k", None).unwrap();
        let g = t.geometry();
        assert_eq!(g.zone_cap_bytes, 2 * 192 * 4096);
        assert!(t.orders_zone_writes());
        assert_eq!(d.controllers().count(), 3);
        let e = d.target(&mut rt, "raid:3xtiny", None).err().unwrap();
        assert!(e.contains("ZRWA") || e.contains("chunk"), "{e}");
        let e = d.target(&mut rt, "raid:tiny,tiny", None).err().unwrap();
        assert!(e.contains("at least 3"), "{e}");
        let e = d
            .target(&mut rt, "raid:tiny,tiny,zn540", None)
            .err()
            .unwrap();
        assert!(e.contains("differs"), "{e}");
    }
}
