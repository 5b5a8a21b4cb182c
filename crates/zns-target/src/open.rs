//! Opening what a [`TargetSpec`] names: [`open`] gives an [`OpenedDevice`]
//! (an emulated controller, a RAID array with its member controllers, or a
//! real device), whose namespaces are [`Target`]s — a zoned or a
//! conventional device behind the `zns_core` boundary, with its
//! [`Geometry`] in bytes. [`Devices`] opens each device name of a run once
//! and shares it between the clients naming it, so that they contend for
//! the same flash.

use std::collections::BTreeMap;
use std::path::Path;
use std::rc::Rc;

use zns_core::{BlockDevice, IoFlags, NvmeError, ZonedDevice, ZrwaConfig};
use zns_device::{Controller, ControllerOptions, Profile, StoreKind};
use zns_raid::{RaidArray, RaidStats};
use zns_sim::timing::HostStack;
use zns_sim::{Handle, Runtime};

use crate::error::TargetError;
use crate::spec::TargetSpec;

/// A namespace clients read and write: any zoned device (an emulated zoned
/// namespace, a RAID array, a real zoned block device) or a conventional
/// one. What a client may do differs only by what the device says of
/// itself (`ZonedDevice::orders_zone_writes`).
#[derive(Clone)]
pub enum Target {
    Zoned(Rc<dyn ZonedDevice>),
    Block(Rc<dyn BlockDevice>),
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
    pub fn zoned(&self) -> Option<&dyn ZonedDevice> {
        match self {
            Target::Zoned(z) => Some(z.as_ref()),
            Target::Block(_) => None,
        }
    }

    /// The device accepts several writes in flight in one zone, in
    /// submission order (see `ZonedDevice::orders_zone_writes`).
    pub fn orders_zone_writes(&self) -> bool {
        self.zoned().is_some_and(|z| z.orders_zone_writes())
    }

    pub fn geometry(&self) -> Geometry {
        match self {
            Target::Zoned(z) => {
                let c = z.config();
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
            Target::Block(b) => b.read(slba, buf).await,
        }
    }

    pub async fn write(&self, slba: u64, data: &[u8]) -> Result<(), NvmeError> {
        match self {
            Target::Zoned(z) => z.write(slba, data, IoFlags::NONE).await,
            Target::Block(b) => b.write(slba, data, IoFlags::NONE).await,
        }
    }

    /// Dataset Management deallocate (TRIM) of `nlb` blocks at `slba`; a
    /// zoned namespace has none (its zones are reset): Invalid Opcode.
    pub async fn discard(&self, slba: u64, nlb: u64) -> Result<(), NvmeError> {
        match self {
            Target::Zoned(_) => Err(zns_core::NvmeStatus::InvalidOpcode.into()),
            Target::Block(b) => b.discard(slba, nlb).await,
        }
    }

    pub async fn flush(&self) -> Result<(), NvmeError> {
        match self {
            Target::Zoned(z) => z.flush().await,
            Target::Block(b) => b.flush().await,
        }
    }
}

/// How to open an emulated device.
#[derive(Debug, Clone, Copy)]
pub struct OpenOptions {
    /// What a controller made from a profile keeps of the data (an image
    /// keeps what it was created with).
    pub store: StoreKind,
    /// The host stack of a controller made from a profile or opened from an
    /// image (an array's members take theirs from its [`crate::RaidSpec`]).
    pub host_stack: HostStack,
}

impl Default for OpenOptions {
    /// Timing only (no data kept), the SPDK host stack.
    fn default() -> OpenOptions {
        OpenOptions {
            store: StoreKind::None,
            host_stack: HostStack::Spdk,
        }
    }
}

/// An opened device.
pub enum OpenedDevice {
    /// An emulated controller (from a profile or an image).
    Controller(Controller),
    /// A RAID array and its members' controllers.
    Raid {
        array: RaidArray,
        members: Vec<Controller>,
    },
    /// A real Linux zoned block device.
    Real(Rc<dyn ZonedDevice>),
}

/// Creates a device image of `profile` at `path` (`zns create`): an
/// emulated controller whose zones and data persist in the file, with
/// `host_stack`. An existing file is refused (the device's error).
pub fn create_image(
    rt: &Runtime,
    profile: Profile,
    path: &Path,
    host_stack: HostStack,
) -> Result<Controller, TargetError> {
    Controller::create_image(&rt.handle(), profile, path, host_stack).map_err(|source| {
        TargetError::Device {
            context: format!("cannot create device image {}", path.display()),
            source,
        }
    })
}

/// Opens what `spec` names on `rt` (an array is created there: its members
/// are formatted).
pub fn open(
    rt: &mut Runtime,
    spec: &TargetSpec,
    opts: &OpenOptions,
) -> Result<OpenedDevice, TargetError> {
    let handle = rt.handle();
    match spec {
        TargetSpec::Profile(p) => {
            let copts = ControllerOptions {
                store: opts.store,
                host_stack: opts.host_stack,
            };
            Controller::new(&handle, Profile::clone(p), copts)
                .map(OpenedDevice::Controller)
                .map_err(|source| TargetError::Device {
                    context: p.name.clone(),
                    source,
                })
        }
        TargetSpec::Image(path) => Controller::open_image(&handle, path, opts.host_stack)
            .map(OpenedDevice::Controller)
            .map_err(|source| TargetError::Device {
                context: format!("cannot open device image {}", path.display()),
                source,
            }),
        TargetSpec::Raid(r) => {
            let (array, members) = r.create(rt, opts.store)?;
            Ok(OpenedDevice::Raid { array, members })
        }
        TargetSpec::Linux(path) => open_real(&handle, path).map(OpenedDevice::Real),
    }
}

impl OpenedDevice {
    /// The NSID a client gets without asking for one: the controller's first
    /// zoned namespace, else 1.
    pub fn default_nsid(&self) -> u32 {
        match self {
            OpenedDevice::Controller(c) => c.first_zoned().map_or(1, |z| z.nsid()),
            _ => 1,
        }
    }

    /// Namespace `nsid` (default: [`OpenedDevice::default_nsid`]). An array
    /// or a real device is namespace 1 alone; `name` is the device's name
    /// for the errors.
    pub fn target(&self, name: &str, nsid: Option<u32>) -> Result<Target, TargetError> {
        let ns = TargetError::Namespace;
        match self {
            OpenedDevice::Raid { array, .. } => match nsid {
                Some(n) if n != 1 => {
                    Err(ns(format!("nsid={n}: a RAID array has namespace 1 only")))
                }
                _ => Ok(Target::Zoned(Rc::new(array.clone()))),
            },
            OpenedDevice::Real(dev) => match nsid {
                Some(n) => Err(ns(format!("nsid={n}: {name} is one namespace already"))),
                None => Ok(Target::Zoned(dev.clone())),
            },
            OpenedDevice::Controller(ctrl) => {
                let n = nsid.unwrap_or_else(|| self.default_nsid());
                if let Some(z) = ctrl.zoned(n) {
                    Ok(Target::Zoned(Rc::new(z)))
                } else if let Some(b) = ctrl.conventional(n) {
                    Ok(Target::Block(Rc::new(b)))
                } else if nsid.is_none() {
                    Err(ns(format!("{name} has no namespace")))
                } else {
                    Err(ns(format!(
                        "nsid={n}: {name} has namespaces 1..={} only",
                        ctrl.namespace_count()
                    )))
                }
            }
        }
    }

    /// Sets the host stack an emulated controller's clients go through. An
    /// array's members keep the stack of its spec: the array is a bio-based
    /// logical device (like a device-mapper target) with no scheduler of its
    /// own; a real device's host stack is the kernel's own.
    pub fn set_host_stack(&self, stack: HostStack) {
        if let OpenedDevice::Controller(c) = self {
            c.set_host_stack(stack);
        }
    }

    /// The emulated controllers: the device's own, or an array's members.
    pub fn controllers(&self) -> &[Controller] {
        match self {
            OpenedDevice::Controller(c) => std::slice::from_ref(c),
            OpenedDevice::Raid { members, .. } => members,
            OpenedDevice::Real(_) => &[],
        }
    }

    /// The array's counters, for an array.
    pub fn raid_stats(&self) -> Option<RaidStats> {
        match self {
            OpenedDevice::Raid { array, .. } => Some(array.stats()),
            _ => None,
        }
    }

    /// A clean shutdown before the device is dropped: an array waits for its
    /// background work, flushes its members and logs every zone's write
    /// pointer (`RaidArray::shutdown`), so that reopening its member images
    /// finds each zone where it was. Controllers need none (dropping one
    /// saves its image).
    pub async fn shutdown(&self) -> Result<(), NvmeError> {
        match self {
            OpenedDevice::Raid { array, .. } => array.shutdown().await,
            _ => Ok(()),
        }
    }

    /// The device's own counters as JSON: every emulated controller's
    /// commands (`ControllerStats`) and FTL counters by namespace, and an
    /// array's `RaidStats` with its flash blocks and flash write
    /// amplification.
    pub fn stats_json(&self) -> serde_json::Value {
        let controllers: Vec<serde_json::Value> = self
            .controllers()
            .iter()
            .map(|c| {
                let ftl: BTreeMap<String, _> = (1..=c.namespace_count())
                    .filter_map(|n| Some((n.to_string(), c.ftl_stats(n)?)))
                    .collect();
                serde_json::json!({ "commands": c.stats(), "ftl": ftl })
            })
            .collect();
        let mut doc = serde_json::json!({ "controllers": controllers });
        if let Some(r) = self.raid_stats() {
            doc["raid"] = serde_json::json!({
                "counters": r,
                "flash_blocks": r.flash_blocks(),
                "member_write_blocks": r.member_write_blocks(),
                "flash_waf": r.flash_waf(),
            });
        }
        doc
    }
}

/// The devices a run has opened, by device name: each is opened on first
/// use (timing only, `OpenOptions::default()`, unless made
/// [`Devices::with_options`]) and shared by every client naming it.
#[derive(Default)]
pub struct Devices {
    opened: BTreeMap<String, OpenedDevice>,
    options: OpenOptions,
}

impl Devices {
    /// Devices opened with `options` (e.g. keeping data in memory, for a
    /// run that checks what it reads back).
    pub fn with_options(options: OpenOptions) -> Devices {
        Devices {
            opened: BTreeMap::new(),
            options,
        }
    }

    /// The namespace `nsid` (see [`OpenedDevice::target`]) of the device
    /// `name` names, opening it on first use. Errors start with
    /// `filename={name}` or `nsid=N`.
    pub fn target(
        &mut self,
        rt: &mut Runtime,
        name: &str,
        nsid: Option<u32>,
    ) -> Result<Target, TargetError> {
        if !self.opened.contains_key(name) {
            let context = || format!("filename={name}");
            let spec = TargetSpec::parse(name).map_err(|e| e.context(context()))?;
            let dev = open(rt, &spec, &self.options).map_err(|e| e.context(context()))?;
            self.opened.insert(name.to_string(), dev);
        }
        self.opened[name].target(name, nsid)
    }

    /// Sets the host stack of the device `name` (opened already), see
    /// [`OpenedDevice::set_host_stack`].
    pub fn set_host_stack(&self, name: &str, stack: HostStack) {
        if let Some(d) = self.opened.get(name) {
            d.set_host_stack(stack);
        }
    }

    /// The emulated controller the device `name` (opened already) is, if it
    /// is one (not an array or a real device).
    pub fn controller(&self, name: &str) -> Option<&Controller> {
        match self.opened.get(name)? {
            OpenedDevice::Controller(c) => Some(c),
            _ => None,
        }
    }

    /// The timing parameters of the device `name` when it is one emulated
    /// controller (not an array, not a real device): what a client's host
    /// side (fio's engine) needs to know of the host stack's costs.
    pub fn timing(&self, name: &str) -> Option<&zns_sim::timing::TimingProfile> {
        self.controller(name).map(|c| &c.profile().timing)
    }

    /// Every emulated controller of the run, RAID members included.
    pub fn controllers(&self) -> impl Iterator<Item = &Controller> {
        self.opened.values().flat_map(|d| d.controllers())
    }

    /// The counters of every RAID array of the run, by device name.
    pub fn raid_stats(&self) -> BTreeMap<String, RaidStats> {
        self.opened
            .iter()
            .filter_map(|(k, d)| Some((k.clone(), d.raid_stats()?)))
            .collect()
    }
}

/// Whether `name` names a real device, without loading anything (a run on
/// one paces its runtime to the wall clock, so that latencies are real).
pub fn is_real_device(name: &str) -> bool {
    crate::spec::linux_device_path(name).is_some()
}

#[cfg(target_os = "linux")]
fn open_real(handle: &Handle, path: &Path) -> Result<Rc<dyn ZonedDevice>, TargetError> {
    zns_linux::LinuxZoned::open(handle, path, zns_linux::LinuxOptions::default())
        .map(|d| Rc::new(d) as Rc<dyn ZonedDevice>)
        .map_err(TargetError::from)
}

#[cfg(not(target_os = "linux"))]
fn open_real(_handle: &Handle, _path: &Path) -> Result<Rc<dyn ZonedDevice>, TargetError> {
    Err(TargetError::Unsupported(
        "real zoned block devices need Linux",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raid_filename_opens_an_array_and_invalid_ones_are_refused() {
        let mut rt = Runtime::new(1);
        let mut d = Devices::default();
        let t = d.target(&mut rt, "raid:3xtiny,chunk=32k", None).unwrap();
        let g = t.geometry();
        assert_eq!(g.zone_cap_bytes, 2 * 192 * 4096);
        assert!(t.orders_zone_writes());
        assert_eq!(d.controllers().count(), 3);
        assert_eq!(d.raid_stats().len(), 1);
        let e = d
            .target(&mut rt, "raid:3xtiny", None)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("ZRWA") || e.contains("chunk"), "{e}");
        let e = d.target(&mut rt, "raid:tiny,tiny", None).err().unwrap();
        // typed: the array's own error under the device's name
        match &e {
            TargetError::Context { context, source } => {
                assert_eq!(context, "filename=raid:tiny,tiny");
                assert!(
                    matches!(
                        **source,
                        TargetError::Raid {
                            source: zns_raid::RaidError::TooFewMembers { members: 2 },
                            ..
                        }
                    ),
                    "{source:?}"
                );
            }
            other => panic!("{other:?}"),
        }
        let e = e.to_string();
        assert!(e.contains("at least 3"), "{e}");
        let e = d
            .target(&mut rt, "raid:tiny,tiny,zn540", None)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("differs"), "{e}");
    }

    #[test]
    fn a_raid_chunk_in_decimal_units_is_refused_with_the_size_rule() {
        let mut rt = Runtime::new(1);
        let mut d = Devices::default();
        let e = d
            .target(&mut rt, "raid:3xzn540,chunk=64KiB", None)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("chunk of 64000 bytes"), "{e}");
        assert!(e.contains("did you mean 64k?"), "{e}");
    }

    #[test]
    fn a_profile_opens_its_namespaces() {
        let mut rt = Runtime::new(1);
        let mut d = Devices::default();
        let t = d.target(&mut rt, "zn540-cns", None).unwrap();
        assert!(t.zoned().is_some());
        assert!(!t.orders_zone_writes());
        let t = d.target(&mut rt, "zn540-cns", Some(1)).unwrap();
        assert!(matches!(t, Target::Block(_)));
        let e = d.target(&mut rt, "zn540-cns", Some(9)).err().unwrap();
        assert!(matches!(&e, TargetError::Namespace(_)), "{e:?}");
        assert!(e.to_string().contains("nsid=9"), "{e}");
        assert_eq!(d.controllers().count(), 1);
    }
}
