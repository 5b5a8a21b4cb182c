//! The device a job runs against: a zoned or a conventional namespace of an
//! emulated controller, opened from a profile name, a profile TOML file or a
//! device image (`filename=`), with its geometry in bytes. One controller is
//! opened per distinct filename in a run and shared by the jobs naming it, so
//! jobs on one device contend for the same flash. A filename under `/dev/`
//! (or `linux:PATH`) is a real Linux zoned block device (zns-linux).

use std::collections::BTreeMap;
use std::path::Path;
use std::rc::Rc;

use zns_core::{BlockDevice, IoFlags, NvmeError, ZonedDevice, ZrwaConfig};
use zns_device::{
    Controller, ControllerOptions, EmulatedConventionalNs, EmulatedZns, Profile, StoreKind,
};
use zns_sim::timing::HostStack;
use zns_sim::Handle;

/// A namespace jobs read and write.
#[derive(Clone)]
pub enum Target {
    Zoned(EmulatedZns),
    Block(EmulatedConventionalNs),
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
    /// The emulated controller (None for a real device).
    pub fn controller(&self) -> Option<&Controller> {
        match self {
            Target::Zoned(z) => Some(z.controller()),
            Target::Block(b) => Some(b.controller()),
            Target::Device(_) => None,
        }
    }

    pub fn zoned(&self) -> Option<&dyn ZonedDevice> {
        match self {
            Target::Zoned(z) => Some(z),
            Target::Block(_) => None,
            Target::Device(d) => Some(d.as_ref()),
        }
    }

    pub fn geometry(&self) -> Geometry {
        match self {
            Target::Zoned(_) | Target::Device(_) => {
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
            Target::Block(b) => b.read(slba, buf).await,
            Target::Device(d) => d.read(slba, buf).await,
        }
    }

    pub async fn write(&self, slba: u64, data: &[u8]) -> Result<(), NvmeError> {
        match self {
            Target::Zoned(z) => z.write(slba, data, IoFlags::NONE).await,
            Target::Block(b) => b.write(slba, data, IoFlags::NONE).await,
            Target::Device(d) => d.write(slba, data, IoFlags::NONE).await,
        }
    }

    pub async fn flush(&self) -> Result<(), NvmeError> {
        match self {
            Target::Zoned(z) => z.flush().await,
            Target::Block(b) => b.flush().await,
            Target::Device(d) => d.flush().await,
        }
    }
}

/// Controllers opened so far in a run, by filename.
#[derive(Default)]
pub struct Devices {
    controllers: BTreeMap<String, Controller>,
    real: BTreeMap<String, Rc<dyn ZonedDevice>>,
}

impl Devices {
    /// The namespace `nsid` (default: the first zoned one, else NSID 1) of the
    /// controller `filename` names, opening it on first use.
    pub fn target(
        &mut self,
        handle: &Handle,
        filename: &str,
        nsid: Option<u32>,
    ) -> Result<Target, String> {
        if let Some(path) = zns_linux::device_path(filename) {
            if let Some(n) = nsid {
                return Err(format!("nsid={n}: {filename} is one namespace already"));
            }
            if !self.real.contains_key(filename) {
                let dev = open_real(handle, path)?;
                self.real.insert(filename.to_string(), dev);
            }
            return Ok(Target::Device(self.real[filename].clone()));
        }
        if !self.controllers.contains_key(filename) {
            let ctrl = open_controller(handle, filename)?;
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

    pub fn controllers(&self) -> impl Iterator<Item = &Controller> {
        self.controllers.values()
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
